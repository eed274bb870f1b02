package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// trackOnce makes trackSources walk the tree once per test binary.
var trackOnce sync.Once

// trackSources opens every file the capsule binary may be built from, so
// that go test's result cache depends on them. The tests here run the
// binary TestMain builds and import none of its packages: without this,
// `go test ./e2e` would print "(cached)" after a change to node code and
// report a result of the old binary. go test keys a cached result on the
// files the test opened (their size and modification time), but only on
// those opened after testing.M.Run began logging, so this runs from the
// tests that use the binary, not from TestMain. Test files and testdata
// folders are left out: they are not part of the binary.
func trackSources(t *testing.T) {
	t.Helper()
	trackOnce.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			t.Fatal(err)
		}
		paths, err := openTree(root)
		if err != nil {
			t.Fatalf("e2e: reading the source tree for the test cache: %v", err)
		}
		if len(paths) == 0 {
			t.Fatalf("e2e: found no source files under %s", root)
		}
	})
}

// openTree opens (and closes) every regular file under root except test
// files, testdata folders and hidden entries, and returns their paths
// relative to root.
func openTree(root string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || d.IsDir() && name == "testdata") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		paths = append(paths, filepath.ToSlash(rel))
		return f.Close()
	})
	return paths, err
}

// TestOpenTree checks that the files the test cache is keyed on include
// the binary's sources (main package, node code, go.mod, an embedded
// schema) and leave out test files and testdata.
func TestOpenTree(t *testing.T) {
	trackSources(t)
	paths, err := openTree("..")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range paths {
		got[p] = true
		if strings.HasSuffix(p, "_test.go") || strings.Contains(p, "/testdata/") || strings.HasPrefix(p, ".") {
			t.Errorf("opened %s, which is not part of the binary", p)
		}
	}
	for _, want := range []string{"go.mod", "go.sum", "cmd/capsule/main.go", "node/source_move.go", "transfer/source.go", "envspec/spec.schema.json"} {
		if !got[want] {
			t.Errorf("%s is not among the %d files the e2e result cache is keyed on", want, len(paths))
		}
	}
}
