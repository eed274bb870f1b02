package vfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadDirStatMatchesLstat checks, on the real file system and on Mem,
// that ReadDirStat reports each entry as ReadDir and Lstat do: name,
// size, mode (type and permission bits, setuid, setgid, sticky),
// modification time and, on the OS, the same *syscall.Stat_t.
func TestReadDirStatMatchesLstat(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, perm fs.FileMode, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
	}
	mk("b.txt", 0o644, "hello")
	mk("a.sh", 0o755|fs.ModeSetuid, "#!/bin/sh\n")
	mk("c", 0o640|fs.ModeSetgid, "")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o750|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "sub"), 0o750|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	compare(t, OS{}, dir)
	compare(t, countingOnly{OS{}}, dir) // the ReadDir and Lstat path

	m := NewMem()
	if err := m.MkdirAll("w/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(m, "w/f", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Symlink("f", "w/l"); err != nil {
		t.Fatal(err)
	}
	compare(t, m, "w")
}

// countingOnly hides OS's type, so ReadDirStat takes the generic path.
type countingOnly struct{ FS }

func compare(t *testing.T, fsys FS, dir string) {
	t.Helper()
	got, err := ReadDirStat(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ents) {
		t.Fatalf("%T: %d entries, ReadDir lists %d", fsys, len(got), len(ents))
	}
	for i, e := range ents {
		want, err := fsys.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		g := got[i]
		if g.Name() != want.Name() || g.Size() != want.Size() || g.Mode() != want.Mode() || !g.ModTime().Equal(want.ModTime()) || g.IsDir() != want.IsDir() {
			t.Errorf("%T %s: got %s %d %v %v, Lstat says %s %d %v %v", fsys, e.Name(), g.Name(), g.Size(), g.Mode(), g.ModTime(), want.Name(), want.Size(), want.Mode(), want.ModTime())
		}
		if ws, ok := want.Sys().(*syscall.Stat_t); ok {
			gs, ok := g.Sys().(*syscall.Stat_t)
			if !ok || *gs != *ws {
				t.Errorf("%T %s: Sys %+v, Lstat's %+v", fsys, e.Name(), g.Sys(), ws)
			}
		}
	}
}

func TestReadDirStatMissingDir(t *testing.T) {
	if _, err := ReadDirStat(OS{}, filepath.Join(t.TempDir(), "nope")); !os.IsNotExist(err) {
		t.Fatalf("got %v, want a not-exist error", err)
	}
}
