package vfs

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// memTree renders every entry reachable from the root, with file contents.
func memTree(t *rapid.T, m *Mem) string {
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := m.ReadDir(dir)
		if err != nil {
			t.Fatalf("readdir %s: %v", dir, err)
		}
		for _, e := range ents {
			p := strings.TrimSuffix(dir, "/") + "/" + e.Name()
			if e.IsDir() {
				out = append(out, p+"/")
				walk(p)
				continue
			}
			b, _ := ReadFile(m, p)
			out = append(out, p+"="+string(b))
		}
	}
	walk("/")
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestMemLogMatchesEntries runs random operations on a small tree and
// checks the invariants of the crash log after each: the durable entries
// of every directory with its pending changes applied are its current
// entries, and a crash that keeps every change leaves the current tree.
func TestMemLogMatchesEntries(t *testing.T) {
	names := []string{"/a", "/b", "/d", "/d/a", "/d/e", "/d/e/a", "/e", "/e/a"}
	rapid.Check(t, func(t *rapid.T) {
		m := NewMem()
		for range rapid.IntRange(1, 40).Draw(t, "ops") {
			p, q := rapid.SampledFrom(names).Draw(t, "p"), rapid.SampledFrom(names).Draw(t, "q")
			switch rapid.IntRange(0, 6).Draw(t, "op") {
			case 0:
				if f, err := m.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
					_, _ = f.Write([]byte(p))
					if rapid.Bool().Draw(t, "fsync") {
						_ = f.Sync()
					}
					_ = f.Close()
				}
			case 1:
				_ = m.Mkdir(p, 0o755)
			case 2:
				_ = m.Remove(p)
			case 3:
				_ = m.RemoveAll(p)
			case 4:
				_ = m.Rename(p, q)
			case 5, 6:
				_ = m.SyncDir(p)
			}
			for _, d := range append([]string{"/"}, names...) {
				if fi, err := m.Stat(d); err == nil && fi.IsDir() {
					if err := m.checkLog(d); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		want := memTree(t, m)
		c := m.Clone()
		c.CrashKeeping(func(int) bool { return true })
		if got := memTree(t, c); got != want {
			t.Fatalf("crash keeping everything:\n got %s\nwant %s", got, want)
		}
		d := m.Durable()
		m.Crash()
		if got, want := memTree(t, m), memTree(t, d); got != want {
			t.Fatal(fmt.Sprintf("Crash %s, Durable %s", got, want))
		}
	})
}
