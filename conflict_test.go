package capsule_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No file of the repository keeps a merge's conflict markers: a doc that
// does keeps both versions of a paragraph and says neither.
func TestNoConflictMarkers(t *testing.T) {
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "testdata" || n == "fixtures" {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".go" && ext != ".md" && ext != ".sh" && ext != ".txt" {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; sc.Scan(); line++ {
			s := sc.Text()
			if strings.HasPrefix(s, "<<<<<<< ") || strings.HasPrefix(s, ">>>>>>> ") {
				t.Errorf("%s:%d: a merge conflict marker: %q", p, line, s)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
