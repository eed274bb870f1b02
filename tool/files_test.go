package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadFile(t *testing.T) {
	f := newFixture(t, Options{MaxFileBytes: 64}, map[string]string{
		"a.txt": "one\ntwo\nthree\n", "nonl.txt": "x\ny", "empty.txt": "", "bin.dat": "ab\x00cd",
		"big.txt": strings.Repeat("z", 65), "dir/in.txt": "in\n",
	})
	for _, tc := range []struct{ args, want string }{
		{`{"path":"a.txt"}`, "     1\tone\n     2\ttwo\n     3\tthree\n"},
		{`{"path":"./dir/../a.txt"}`, "     1\tone\n     2\ttwo\n     3\tthree\n"},
		{`{"path":"nonl.txt"}`, "     1\tx\n     2\ty\n"},
		{`{"path":"a.txt","offset":2}`, "     2\ttwo\n     3\tthree\n[lines 2-3 of 3]\n"},
		{`{"path":"a.txt","limit":1}`, "     1\tone\n[lines 1-1 of 3; offset=2 reads on]\n"},
		{`{"path":"a.txt","offset":2,"limit":1}`, "     2\ttwo\n[lines 2-2 of 3; offset=3 reads on]\n"},
		{`{"path":"a.txt","offset":1,"limit":9}`, "     1\tone\n     2\ttwo\n     3\tthree\n"},
		{`{"path":"empty.txt"}`, "(empty.txt is empty)"},
	} {
		if diff := cmp.Diff(tc.want, f.ok(t, ReadFile, tc.args)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.args, diff)
		}
	}
	f.fails(t, ReadFile, `{"path":"a.txt","offset":4}`, "offset 4 is past the end", "3 lines")
	f.fails(t, ReadFile, `{"path":"nope.txt"}`, `"nope.txt" does not exist`)
	f.fails(t, ReadFile, `{"path":"dir"}`, "is a directory")
	f.fails(t, ReadFile, `{"path":"bin.dat"}`, "binary file")
	f.fails(t, ReadFile, `{"path":"big.txt"}`, "65 bytes, over the 64-byte limit")
	f.fails(t, ReadFile, `{"path":"."}`, "is a directory")
}

func TestWriteFile(t *testing.T) {
	f := newFixture(t, Options{MaxFileBytes: 16}, map[string]string{"old.txt": "old", "dir/x": "x"})
	must(t, os.Chmod(filepath.Join(f.ws, "old.txt"), 0o600))
	if got := f.ok(t, WriteFile, `{"path":"new/deep/n.txt","content":"hello\n"}`); got != "created new/deep/n.txt (6 bytes)" {
		t.Errorf("create: %q", got)
	}
	if got := f.ok(t, WriteFile, `{"path":"old.txt","content":"new"}`); got != "replaced old.txt (3 bytes)" {
		t.Errorf("replace: %q", got)
	}
	f.ok(t, WriteFile, `{"path":"empty.txt","content":""}`)
	for p, want := range map[string]string{"new/deep/n.txt": "hello\n", "old.txt": "new", "empty.txt": ""} {
		if got, ok := f.read(t, p); !ok || got != want {
			t.Errorf("%s = %q (exists %v), want %q", p, got, ok, want)
		}
	}
	if st, _ := os.Stat(filepath.Join(f.ws, "old.txt")); st.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want 0600 kept", st.Mode().Perm())
	}
	f.fails(t, WriteFile, `{"path":"dir","content":"x"}`, "is a directory")
	f.fails(t, WriteFile, `{"path":".","content":"x"}`, "workspace root")
	f.fails(t, WriteFile, `{"path":"dir/x/y","content":"x"}`, "dir/x/y")
	f.fails(t, WriteFile, `{"path":"b.txt","content":"12345678901234567"}`, "17 bytes, over the 16-byte limit")
	if _, ok := f.read(t, "b.txt"); ok {
		t.Error("an oversized write created the file")
	}
	noTemps(t, f.ws)
}

// noTemps fails if a temporary file of atomicWrite was left behind.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	for p := range tree(t, dir) {
		if strings.Contains(p, ".capsule-tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
	}
}

func TestEditFile(t *testing.T) {
	f := newFixture(t, Options{}, map[string]string{"a.go": "x := 1\ny := 1\nz := 2\n", "b.txt": "a a a"})
	if got := f.ok(t, EditFile, `{"path":"a.go","old_string":"z := 2","new_string":"z := 3"}`); got != "replaced 1 occurrence(s) in a.go" {
		t.Errorf("edit: %q", got)
	}
	f.fails(t, EditFile, `{"path":"a.go","old_string":":= 1","new_string":":= 9"}`, "occurs 2 times", "replace_all")
	f.fails(t, EditFile, `{"path":"a.go","old_string":"     1\tx := 1","new_string":"q"}`, "not found", "line-number prefixes")
	f.fails(t, EditFile, `{"path":"a.go","old_string":"x","new_string":"x"}`, "the same")
	f.fails(t, EditFile, `{"path":"nope.go","old_string":"x","new_string":"y"}`, "does not exist")
	if got, _ := f.read(t, "a.go"); got != "x := 1\ny := 1\nz := 3\n" {
		t.Errorf("a.go after failed edits = %q", got)
	}
	if got := f.ok(t, EditFile, `{"path":"b.txt","old_string":"a","new_string":"bb","replace_all":true}`); got != "replaced 3 occurrence(s) in b.txt" {
		t.Errorf("replace_all: %q", got)
	}
	if got, _ := f.read(t, "b.txt"); got != "bb bb bb" {
		t.Errorf("b.txt = %q", got)
	}
	noTemps(t, f.ws)
}
