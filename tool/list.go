package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Bounds on one listing: entries shown, and entries walked before the
// walk stops counting.
const (
	maxEntries = 1000
	maxWalk    = 100000
)

type listArgs struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

// listing collects entries up to maxEntries and counts the rest.
type listing struct {
	shown []string
	total int
}

func (l *listing) add(entry string) bool {
	l.total++
	if len(l.shown) < maxEntries {
		l.shown = append(l.shown, entry)
	}
	return l.total < maxWalk
}

func (w *Workspace) listFiles(ctx context.Context, raw json.RawMessage) Result {
	var a listArgs
	if msg := decode(ListFiles, raw, &a); msg != "" {
		return failf("%s", msg)
	}
	p, msg := clean(a.Path)
	if msg != "" {
		return failf("%s: %s", ListFiles, msg)
	}
	fsys := w.root.FS()
	st, err := fs.Stat(fsys, p)
	if err != nil {
		return failf("%s", explain(ListFiles, p, err))
	}
	if !st.IsDir() {
		return failf("%s: %q is a file, not a directory; read_file reads it", ListFiles, p)
	}
	var l listing
	err = fs.WalkDir(fsys, p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if q == p {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !l.add(w.entry(q, d)) {
			return fs.SkipAll
		}
		if d.IsDir() && (!a.Recursive || d.Name() == ".git") {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return failf("%s", explain(ListFiles, p, err))
	}
	return Result{Content: l.text(p)}
}

// entry is one line of a listing: the path from the workspace root, "/"
// after a directory, " -> target" after a symbolic link.
func (w *Workspace) entry(q string, d fs.DirEntry) string {
	switch {
	case d.IsDir():
		return q + "/"
	case d.Type()&fs.ModeSymlink != 0:
		to, err := w.root.Readlink(q)
		if err != nil {
			return q + " -> ?"
		}
		return q + " -> " + to
	}
	return q
}

func (l *listing) text(p string) string {
	if l.total == 0 {
		return fmt.Sprintf("(%s is empty)", path.Clean(p)+"/")
	}
	var b strings.Builder
	for _, e := range l.shown {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	switch {
	case l.total >= maxWalk:
		fmt.Fprintf(&b, "[listing truncated: showing %d of more than %d entries; list a subdirectory]\n", len(l.shown), maxWalk)
	case l.total > len(l.shown):
		fmt.Fprintf(&b, "[listing truncated: showing %d of %d entries; list a subdirectory]\n", len(l.shown), l.total)
	}
	return b.String()
}
