package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// Bounds on one search: matches shown, and bytes of one matching line.
const (
	maxMatches   = 200
	maxMatchLine = 300
)

type searchArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob"`
}

// searcher is one search in progress.
type searcher struct {
	w       *Workspace
	re      *regexp.Regexp
	glob    string
	matches []string
	more    bool // matches beyond maxMatches were found
	files   int
	skipped int // binary or oversized files
}

func (w *Workspace) search(ctx context.Context, raw json.RawMessage) Result {
	var a searchArgs
	if msg := decode(Search, raw, &a); msg != "" {
		return failf("%s", msg)
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return failf("%s: pattern is not a valid Go regular expression: %v", Search, err)
	}
	if _, err := path.Match(a.Glob, ""); err != nil {
		return failf("%s: glob %q is not a valid pattern: %v", Search, a.Glob, err)
	}
	p, msg := clean(a.Path)
	if msg != "" {
		return failf("%s: %s", Search, msg)
	}
	s := &searcher{w: w, re: re, glob: a.Glob}
	if err := fs.WalkDir(w.root.FS(), p, func(q string, d fs.DirEntry, err error) error {
		return s.visit(ctx, q, d, err)
	}); err != nil {
		return failf("%s", explain(Search, p, err))
	}
	return Result{Content: s.text(a.Pattern, p)}
}

func (s *searcher) visit(ctx context.Context, q string, d fs.DirEntry, err error) error {
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d.IsDir() {
		if d.Name() == ".git" {
			return fs.SkipDir
		}
		return nil
	}
	if !d.Type().IsRegular() || !s.wanted(q) {
		return nil
	}
	s.file(q)
	if s.more {
		return fs.SkipAll
	}
	return nil
}

// wanted reports whether the file q passes the glob: against its name,
// or against its whole path when the glob holds a "/".
func (s *searcher) wanted(q string) bool {
	if s.glob == "" {
		return true
	}
	name := path.Base(q)
	if strings.Contains(s.glob, "/") {
		name = q
	}
	ok, _ := path.Match(s.glob, name)
	return ok
}

func (s *searcher) file(q string) {
	b, msg := s.w.load(Search, q)
	if msg != "" || binary(b) {
		s.skipped++
		return
	}
	s.files++
	for i, line := range strings.Split(string(b), "\n") {
		if !s.re.MatchString(line) {
			continue
		}
		if len(s.matches) == maxMatches {
			s.more = true
			return
		}
		s.matches = append(s.matches, fmt.Sprintf("%s:%d: %s", q, i+1, short(strings.TrimRight(line, "\r"), maxMatchLine)))
	}
}

func (s *searcher) text(pattern, p string) string {
	if len(s.matches) == 0 {
		return fmt.Sprintf("no matches for %q in %d files under %s (%d binary or oversized files skipped)", pattern, s.files, p, s.skipped)
	}
	out := strings.Join(s.matches, "\n") + "\n"
	if s.more {
		out += fmt.Sprintf("[search truncated: showing the first %d matches; narrow the pattern, path or glob]\n", maxMatches)
	}
	return out
}
