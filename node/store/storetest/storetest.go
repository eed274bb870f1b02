// Package storetest is the conformance suite of store.Store: every
// implementation runs it (store.Disk on the OS and on vfs.Mem, store.Mem).
// Tests only.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/vfs"
)

// Factory returns a new, empty store, and a function that simulates a
// power loss and returns the store as a restart finds it (nil when the
// implementation cannot simulate one, as on a real disk).
type Factory func(t *testing.T) (s store.Store, crash func() store.Store)

// Run runs the suite against stores from f.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(*testing.T, Factory)
	}{
		{"PutHasOpen", testPutHasOpen},
		{"PutRefusesWrongDigest", testPutRefusesWrongDigest},
		{"PutTwice", testPutTwice},
		{"ListRemove", testListRemove},
		{"OpenMissing", testOpenMissing},
		{"SyncedSurvivesCrash", testSyncedSurvivesCrash},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, f) })
	}
}

func put(t *testing.T, s store.Store, data string) digest.Digest {
	t.Helper()
	d := digest.FromString(data)
	added, n, err := s.Put(d, strings.NewReader(data))
	if err != nil || !added || n != int64(len(data)) {
		t.Fatalf("Put(%q) = %v, %d, %v; want true, %d, nil", data, added, n, err, len(data))
	}
	return d
}

func read(t *testing.T, s store.Store, d digest.Digest) string {
	t.Helper()
	r, err := s.Open(d)
	if err != nil {
		t.Fatalf("Open(%s): %v", d.Short(), err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", d.Short(), err)
	}
	return string(b)
}

func testPutHasOpen(t *testing.T, f Factory) {
	s, _ := f(t)
	d := digest.FromString("hello")
	if s.Has(d) {
		t.Fatal("an empty store has a blob")
	}
	put(t, s, "hello")
	if !s.Has(d) {
		t.Fatal("Has is false after Put")
	}
	if got := read(t, s, d); got != "hello" {
		t.Errorf("Open = %q, want %q", got, "hello")
	}
}

func testPutRefusesWrongDigest(t *testing.T, f Factory) {
	s, _ := f(t)
	d := digest.FromString("announced")
	if _, _, err := s.Put(d, strings.NewReader("other bytes")); !errors.Is(err, store.ErrBlobMismatch) {
		t.Fatalf("Put of bytes that do not hash to d = %v, want ErrBlobMismatch", err)
	}
	if s.Has(d) {
		t.Error("a refused blob is in the store")
	}
	if ds, _ := s.List(); len(ds) != 0 {
		t.Errorf("List after a refused Put = %v, want none", ds)
	}
}

func testPutTwice(t *testing.T, f Factory) {
	s, _ := f(t)
	d := put(t, s, "same")
	added, n, err := s.Put(d, bytes.NewReader([]byte("same")))
	if err != nil || added || n != 4 {
		t.Errorf("second Put = %v, %d, %v; want false, 4, nil", added, n, err)
	}
}

func testListRemove(t *testing.T, f Factory) {
	s, _ := f(t)
	a, b := put(t, s, "a"), put(t, s, "b")
	got, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	want := []digest.Digest{a, b}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if err := s.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(a); err != nil {
		t.Errorf("Remove of an absent blob = %v, want nil", err)
	}
	if s.Has(a) || !s.Has(b) {
		t.Errorf("after Remove(a): Has(a) = %v, Has(b) = %v; want false, true", s.Has(a), s.Has(b))
	}
}

func testOpenMissing(t *testing.T, f Factory) {
	s, _ := f(t)
	if _, err := s.Open(digest.FromString("absent")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Open of an absent blob = %v, want ErrNotFound", err)
	}
}

// testSyncedSurvivesCrash checks the durability promise: a blob Put and
// Synced survives a crash whole; one Put after the Sync is whole or absent.
func testSyncedSurvivesCrash(t *testing.T, f Factory) {
	s, crash := f(t)
	if crash == nil {
		t.Log("this implementation cannot simulate a crash: only Sync's result is checked")
	}
	kept := put(t, s, "kept")
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	late := put(t, s, "late")
	if crash == nil {
		return
	}
	s = crash()
	if got := read(t, s, kept); got != "kept" {
		t.Errorf("synced blob after a crash = %q, want %q", got, "kept")
	}
	if s.Has(late) {
		if got := read(t, s, late); got != "late" {
			t.Errorf("unsynced blob after a crash = %q, want %q or absent", got, "late")
		}
	}
}

// ListTree describes every entry below dir: type, mode, content, link.
func ListTree(tb testing.TB, fsys vfs.FS, dir string) []string {
	tb.Helper()
	var out []string
	var walkDir func(rel string)
	walkDir = func(rel string) {
		ents, err := fsys.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range ents {
			p := path.Join(rel, e.Name())
			host := filepath.Join(dir, filepath.FromSlash(p))
			fi, err := fsys.Lstat(host)
			if err != nil {
				tb.Fatal(err)
			}
			switch {
			case fi.IsDir():
				out = append(out, fmt.Sprintf("%s dir %v", p, fi.Mode().Perm()))
				walkDir(p)
			case fi.Mode()&fs.ModeSymlink != 0:
				target, _ := fsys.Readlink(host)
				out = append(out, fmt.Sprintf("%s link %s", p, target))
			default:
				b, err := vfs.ReadFile(fsys, host)
				if err != nil {
					tb.Fatal(err)
				}
				out = append(out, fmt.Sprintf("%s file %v %q", p, fi.Mode().Perm(), b))
			}
		}
	}
	walkDir("")
	return out
}
