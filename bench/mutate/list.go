package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// mutation is one deliberate bug: replace Original, which must occur exactly
// once in File, by Replacement, and expect one of the packages in Run to
// fail.
type mutation struct {
	Name        string
	Rule        string   // the rule it breaks (issue, spec section)
	File        string   // slash path from the module root
	Run         []string // packages to test, cheapest first
	Equivalent  string   // why it cannot be caught, when it cannot
	Expected    string   // why it is expected to survive on some branches
	Original    string
	Replacement string
	Line        int // where it starts in the list, for messages
}

// parseList reads the mutation list format:
//
//	# a comment (outside a block)
//	[name]
//	rule: what it breaks
//	file: path/from/module/root.go
//	run: ./pkg ./other
//	equivalent: why no test can see it (optional)
//	--- original
//	exact lines
//	--- replacement
//	lines
//	--- end
//
// Snippets are taken byte for byte (tabs included); the newline before
// "--- replacement" and "--- end" is not part of them.
func parseList(r io.Reader) ([]mutation, error) {
	var out []mutation
	var cur *mutation
	var block *strings.Builder
	var inBlock string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	finishBlock := func() {
		s := strings.TrimSuffix(block.String(), "\n")
		if inBlock == "original" {
			cur.Original = s
		} else {
			cur.Replacement = s
		}
	}
	for sc.Scan() {
		n++
		line := sc.Text()
		if inBlock != "" {
			switch line {
			case "--- replacement":
				if inBlock != "original" {
					return nil, fmt.Errorf("line %d: %q after the replacement", n, line)
				}
				finishBlock()
				inBlock, block = "replacement", &strings.Builder{}
			case "--- end":
				finishBlock()
				if inBlock != "replacement" {
					return nil, fmt.Errorf("line %d: %s: no replacement", n, cur.Name)
				}
				inBlock = ""
			default:
				block.WriteString(line)
				block.WriteByte('\n')
			}
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]"):
			if cur != nil {
				if err := cur.check(); err != nil {
					return nil, err
				}
				out = append(out, *cur)
			}
			cur = &mutation{Name: t[1 : len(t)-1], Line: n}
		case cur == nil:
			return nil, fmt.Errorf("line %d: %q before the first [name]", n, t)
		case t == "--- original":
			inBlock, block = "original", &strings.Builder{}
		default:
			key, val, ok := strings.Cut(t, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: %s: want key: value, got %q", n, cur.Name, t)
			}
			if err := cur.set(strings.TrimSpace(key), strings.TrimSpace(val)); err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", n, cur.Name, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if inBlock != "" {
		return nil, fmt.Errorf("%s: unterminated %s block", cur.Name, inBlock)
	}
	if cur != nil {
		if err := cur.check(); err != nil {
			return nil, err
		}
		out = append(out, *cur)
	}
	return out, uniqueNames(out)
}

func (m *mutation) set(key, val string) error {
	switch key {
	case "rule":
		m.Rule = val
	case "file":
		m.File = val
	case "run":
		m.Run = strings.Fields(val)
	case "equivalent":
		m.Equivalent = val
	case "expected":
		m.Expected = val
	default:
		return fmt.Errorf("unknown key %q", key)
	}
	return nil
}

func (m *mutation) check() error {
	switch {
	case m.File == "":
		return fmt.Errorf("line %d: %s: no file", m.Line, m.Name)
	case len(m.Run) == 0:
		return fmt.Errorf("line %d: %s: no packages to run", m.Line, m.Name)
	case m.Original == "":
		return fmt.Errorf("line %d: %s: empty original", m.Line, m.Name)
	case m.Original == m.Replacement:
		return fmt.Errorf("line %d: %s: the replacement is the original", m.Line, m.Name)
	}
	return nil
}

func uniqueNames(ms []mutation) error {
	seen := map[string]int{}
	for _, m := range ms {
		if l, ok := seen[m.Name]; ok {
			return fmt.Errorf("line %d: %s: already defined at line %d", m.Line, m.Name, l)
		}
		seen[m.Name] = m.Line
	}
	return nil
}
