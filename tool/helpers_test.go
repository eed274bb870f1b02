package tool

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a workspace with a directory outside it whose bytes the
// confinement tests check, and a memory file beside it.
type fixture struct {
	ws, outside, memFile string
	w                    *Workspace
}

// newFixture builds a workspace holding files (path: content) and an
// outside directory holding secret.txt, and opens the workspace with o
// (MemoryFile set to the fixture's when o.MemoryFile is "mem").
func newFixture(t *testing.T, o Options, files map[string]string) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside"),
		memFile: filepath.Join(base, "memory", "working_memory.md")}
	for _, d := range []string{f.ws, f.outside, filepath.Dir(f.memFile)} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(f.outside, "secret.txt"), []byte("outside secret\n"), 0o644))
	for p, c := range files {
		full := filepath.Join(f.ws, filepath.FromSlash(p))
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(c), 0o644))
	}
	if o.MemoryFile == "mem" {
		o.MemoryFile = f.memFile
	}
	w, err := OpenWorkspace(f.ws, o)
	must(t, err)
	t.Cleanup(func() { w.Close() })
	f.w = w
	return f
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// run runs a tool with args given as JSON text.
func (f *fixture) run(name, args string) Result {
	return f.w.Run(context.Background(), name, []byte(args))
}

// ok runs a tool and fails the test on an error result.
func (f *fixture) ok(t *testing.T, name, args string) string {
	t.Helper()
	r := f.run(name, args)
	if r.IsError {
		t.Fatalf("%s %s: error %q", name, args, r.Content)
	}
	return r.Content
}

// fails runs a tool, wants an error result and returns its message.
func (f *fixture) fails(t *testing.T, name, args string, want ...string) string {
	t.Helper()
	r := f.run(name, args)
	if !r.IsError {
		t.Fatalf("%s %s: succeeded with %q, want an error", name, args, r.Content)
	}
	for _, w := range want {
		if !strings.Contains(r.Content, w) {
			t.Errorf("%s %s: message %q does not say %q", name, args, r.Content, w)
		}
	}
	return r.Content
}

// read returns a workspace file's content ("" and false when absent).
func (f *fixture) read(t *testing.T, p string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.ws, filepath.FromSlash(p)))
	if os.IsNotExist(err) {
		return "", false
	}
	must(t, err)
	return string(b), true
}

// tree maps every path under dir to its content ("dir" for directories,
// "-> target" for links), to check that nothing outside changed.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			to, err := os.Readlink(p)
			out[rel] = "-> " + to
			return err
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			out[rel] = string(b)
			return err
		}
		return nil
	}))
	return out
}
