package vfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// TestStartWriteback checks that StartWriteback changes no content and
// makes nothing durable, on each FS, and reports a closed handle.
func TestStartWriteback(t *testing.T) {
	tests := []struct {
		name string
		fsys func(t *testing.T) (vfs.FS, string)
	}{
		{"OS", func(t *testing.T) (vfs.FS, string) { return vfs.OS{}, t.TempDir() }},
		{"Mem", func(t *testing.T) (vfs.FS, string) { return vfs.NewMem(), "/" }},
		{"Faulty", func(t *testing.T) (vfs.FS, string) { return vfs.NewFaulty(vfs.NewMem()), "/" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys, dir := tc.fsys(t)
			name := filepath.Join(dir, "f")
			f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			must(t, err)
			_, err = f.Write([]byte("hello"))
			must(t, err)
			must(t, vfs.StartWriteback(f))
			must(t, f.Close())
			if err := vfs.StartWriteback(f); !errors.Is(err, fs.ErrClosed) && !errors.Is(err, os.ErrClosed) {
				t.Errorf("StartWriteback of a closed file = %v, want ErrClosed", err)
			}
			got, err := vfs.ReadFile(fsys, name)
			must(t, err)
			if string(got) != "hello" {
				t.Errorf("content = %q, want %q", got, "hello")
			}
		})
	}
}

// TestStartWritebackNotDurable: on a Mem, data only started towards the
// disk is lost in a crash, as on a real disk before fsync returns.
func TestStartWritebackNotDurable(t *testing.T) {
	m := vfs.NewMem()
	must(t, vfs.WriteFile(m, "/f", []byte("old"), 0o644))
	f, err := m.OpenFile("/f", os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	_, err = f.Write([]byte("new"))
	must(t, err)
	must(t, vfs.StartWriteback(f))
	m.Crash()
	got, err := vfs.ReadFile(m, "/f")
	must(t, err)
	if string(got) != "old" {
		t.Errorf("after a crash /f = %q, want %q", got, "old")
	}
}

// TestFaultyWriteback: a rule on OpWriteback fails StartWriteback, which
// Faulty records as an operation that is not a durable step.
func TestFaultyWriteback(t *testing.T) {
	_, ff := newFaulty(t)
	rule := ff.Fail(vfs.OpWriteback, "/cap", vfs.ErrIO)
	f, err := ff.OpenFile("/cap/f", os.O_WRONLY, 0)
	must(t, err)
	defer f.Close()
	if err := vfs.StartWriteback(f); !errors.Is(err, vfs.ErrIO) {
		t.Errorf("StartWriteback = %v, want ErrIO", err)
	}
	if rule.Hits() != 1 {
		t.Errorf("rule hits = %d, want 1", rule.Hits())
	}
	if vfs.OpWriteback.Durable() {
		t.Error("OpWriteback is a durable step; it makes nothing durable")
	}
	for _, r := range ff.DurableOps() {
		if r.Op == vfs.OpWriteback {
			t.Errorf("durable ops list %v", r)
		}
	}
}
