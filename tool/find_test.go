package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestListFiles(t *testing.T) {
	f := newFixture(t, Options{}, map[string]string{
		"b.txt": "", "a/x.go": "", "a/sub/y.go": "", ".git/HEAD": "ref", "c/.keep": "",
	})
	must(t, os.Symlink("b.txt", filepath.Join(f.ws, "link")))
	must(t, os.Mkdir(filepath.Join(f.ws, "empty"), 0o755))
	for _, tc := range []struct{ args, want string }{
		{`{}`, ".git/\na/\nb.txt\nc/\nempty/\nlink -> b.txt\n"},
		{`{"path":"a"}`, "a/sub/\na/x.go\n"},
		{`{"path":"a","recursive":true}`, "a/sub/\na/sub/y.go\na/x.go\n"},
		{`{"recursive":true}`, ".git/\na/\na/sub/\na/sub/y.go\na/x.go\nb.txt\nc/\nc/.keep\nempty/\nlink -> b.txt\n"},
		{`{"path":"empty"}`, "(empty/ is empty)"},
	} {
		if diff := cmp.Diff(tc.want, f.ok(t, ListFiles, tc.args)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.args, diff)
		}
	}
	f.fails(t, ListFiles, `{"path":"b.txt"}`, "is a file")
	f.fails(t, ListFiles, `{"path":"nope"}`, "does not exist")
}

func TestListFilesCapped(t *testing.T) {
	files := map[string]string{}
	for i := range maxEntries + 5 {
		files[fmt.Sprintf("d/f%04d", i)] = ""
	}
	f := newFixture(t, Options{MaxOutput: 1 << 20}, files)
	got := f.ok(t, ListFiles, `{"path":"d"}`)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != maxEntries+1 || lines[0] != "d/f0000" || lines[maxEntries-1] != fmt.Sprintf("d/f%04d", maxEntries-1) {
		t.Fatalf("%d lines, first %q", len(lines), lines[0])
	}
	if want := fmt.Sprintf("[listing truncated: showing %d of %d entries; list a subdirectory]", maxEntries, maxEntries+5); lines[maxEntries] != want {
		t.Errorf("note %q, want %q", lines[maxEntries], want)
	}
}

func TestSearch(t *testing.T) {
	f := newFixture(t, Options{MaxFileBytes: 100}, map[string]string{
		"main.go": "package main\n// TODO: fix\nfunc main() {}\n", "doc/a.md": "todo list\nTODO too\r\n",
		".git/config": "TODO in git", "bin.dat": "TODO\x00", "big.txt": strings.Repeat("TODO ", 30),
	})
	for _, tc := range []struct{ args, want string }{
		{`{"pattern":"TODO"}`, "doc/a.md:2: TODO too\nmain.go:2: // TODO: fix\n"},
		{`{"pattern":"(?i)todo"}`, "doc/a.md:1: todo list\ndoc/a.md:2: TODO too\nmain.go:2: // TODO: fix\n"},
		{`{"pattern":"TODO","glob":"*.go"}`, "main.go:2: // TODO: fix\n"},
		{`{"pattern":"TODO","glob":"doc/*"}`, "doc/a.md:2: TODO too\n"},
		{`{"pattern":"TODO","path":"doc"}`, "doc/a.md:2: TODO too\n"},
		{`{"pattern":"func \\w+\\(","path":"main.go"}`, "main.go:3: func main() {}\n"},
		{`{"pattern":"nothing"}`, `no matches for "nothing" in 2 files under . (2 binary or oversized files skipped)`},
	} {
		if diff := cmp.Diff(tc.want, f.ok(t, Search, tc.args)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.args, diff)
		}
	}
	f.fails(t, Search, `{"pattern":"a(b"}`, "not a valid Go regular expression")
	f.fails(t, Search, `{"pattern":"a","glob":"[x"}`, "not a valid pattern")
	f.fails(t, Search, `{"pattern":"a","path":"nope"}`, "does not exist")
}

func TestSearchCapped(t *testing.T) {
	long := strings.Repeat("x", 2*maxMatchLine)
	f := newFixture(t, Options{MaxOutput: 1 << 20}, map[string]string{"a.txt": strings.Repeat("hit "+long+"\n", maxMatches+1)})
	got := f.ok(t, Search, `{"pattern":"hit"}`)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != maxMatches+1 || !strings.HasPrefix(lines[maxMatches], "[search truncated: showing the first 200 matches") {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	if want := "a.txt:1: " + short("hit "+long, maxMatchLine); lines[0] != want {
		t.Errorf("line cut to %d bytes, got %d", len(want), len(lines[0]))
	}
}
