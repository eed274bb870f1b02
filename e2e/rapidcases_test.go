package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rapidModule and rapidFailVersion pin the fail-file format: pgregory.net/rapid
// v1.3.0 writes (and replays) only fail files whose version line starts
// with "v0.4.8#" (rapidVersion in its persist.go) and silently ignores
// others. After a rapid upgrade, look the new value up there, and rewrite
// the saved cases if it changed.
const (
	rapidModule      = "pgregory.net/rapid v1.3.0"
	rapidFailVersion = "v0.4.8"
)

// TestRapidRegressionCases checks the saved rapid failures (every failure
// rapid finds is written to <pkg>/testdata/rapid/<Test>/<Test>-*.fail and
// replayed first by every later run of that test): each must sit under a
// test that still exists in its package, and be in the format this rapid
// replays. A renamed test or a rapid upgrade would otherwise drop the
// regression case without a word.
func TestRapidRegressionCases(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(gomod), rapidModule) {
		t.Errorf("go.mod no longer requires %s: check rapidVersion in its persist.go and update rapidFailVersion", rapidModule)
	}
	files, err := filepath.Glob("../*/testdata/rapid/*/*.fail")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../*/*/testdata/rapid/*/*.fail")
	files = append(files, more...)
	for _, f := range files {
		rel, _ := filepath.Rel("..", f)
		dir := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(f)))) // the package of testdata/rapid/<Test>/
		test := filepath.Base(filepath.Dir(f))
		if !strings.HasPrefix(filepath.Base(f), test+"-") {
			t.Errorf("%s: named for another test than its folder %s", rel, test)
		}
		if !hasTest(t, dir, test) {
			t.Errorf("%s: no test %s (or subtest of one) in %s: the case is never replayed", rel, test, dir)
		}
		if v := failVersion(t, f); v != rapidFailVersion {
			t.Errorf("%s: fail file version %q, this rapid replays only %q", rel, v, rapidFailVersion)
		}
	}
	t.Logf("%d saved rapid failures checked", len(files))
}

var testFunc = regexp.MustCompile(`(?m)^func (Test\w*)\(`)

// hasTest reports whether a test file of dir defines name, or a test whose
// subtests rapid names name (TestX/sub is saved as TestX_sub).
func hasTest(t *testing.T, dir, name string) bool {
	srcs, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range srcs {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			if m[1] == name || strings.HasPrefix(name, m[1]+"_") {
				return true
			}
		}
	}
	return false
}

// failVersion returns the version of a rapid fail file: its first line that
// is not a comment, up to '#'.
func failVersion(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		v, _, _ := strings.Cut(line, "#")
		return v
	}
	return ""
}
