// Package vfstest holds test helpers for vfs: the conformance suite TestFS
// that every vfs.FS implementation must pass, and ForEachCrashPoint, which
// runs an operation against a vfs.Mem and crashes it before each of its
// durable steps, in every outcome of the changes not yet synced (Outcomes;
// CrashRandom draws one). Only tests import it.
package vfstest

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// TestFS runs the conformance suite against the file systems newFS returns.
// newFS is called once per subtest and returns an empty directory root
// inside fsys (for vfs.OS a t.TempDir(), for a vfs.Mem "/"); the suite works
// only below root. The suite avoids what differs between hosts: modes it
// checks are set with Chmod (no umask), and it never relies on permission
// denials.
func TestFS(t *testing.T, newFS func(t *testing.T) (fsys vfs.FS, root string)) {
	for _, tc := range conformance {
		t.Run(tc.name, func(t *testing.T) {
			fsys, root := newFS(t)
			tc.run(t, env{t: t, fsys: fsys, root: root})
		})
	}
}

var conformance = []struct {
	name string
	run  func(t *testing.T, e env)
}{
	{"WriteRead", testWriteRead},
	{"OpenFlags", testOpenFlags},
	{"OpenErrors", testOpenErrors},
	{"ReadAtSeek", testReadAtSeek},
	{"Truncate", testTruncate},
	{"ClosedFile", testClosedFile},
	{"HandleOutlivesName", testHandleOutlivesName},
	{"Stat", testStat},
	{"Symlink", testSymlink},
	{"Chmod", testChmod},
	{"ReadDir", testReadDir},
	{"Mkdir", testMkdir},
	{"Remove", testRemove},
	{"RemoveAll", testRemoveAll},
	{"Rename", testRename},
	{"RenameErrors", testRenameErrors},
	{"TrailingSlash", testTrailingSlash},
	{"SyncDir", testSyncDir},
	{"SyncFiles", testSyncFiles},
	{"AtomicWrite", testAtomicWrite},
	{"MkdirAllDurable", testMkdirAllDurable},
	{"Concurrent", testConcurrent},
}

// env is one subtest's file system with helpers that fail the test on
// unexpected errors.
type env struct {
	t    *testing.T
	fsys vfs.FS
	root string
}

// p returns name below the root. A trailing separator in name is kept.
func (e env) p(name string) string {
	p := filepath.Join(e.root, name)
	if strings.HasSuffix(name, "/") {
		p += "/"
	}
	return p
}

func (e env) write(name, data string) {
	e.t.Helper()
	if err := e.fsys.MkdirAll(filepath.Dir(e.p(name)), 0o755); err != nil {
		e.t.Fatalf("MkdirAll(dir of %s): %v", name, err)
	}
	if err := vfs.WriteFile(e.fsys, e.p(name), []byte(data), 0o644); err != nil {
		e.t.Fatalf("WriteFile(%s): %v", name, err)
	}
}

func (e env) read(name string) string {
	e.t.Helper()
	b, err := vfs.ReadFile(e.fsys, e.p(name))
	if err != nil {
		e.t.Fatalf("ReadFile(%s): %v", name, err)
	}
	return string(b)
}

func (e env) mkdir(name string) {
	e.t.Helper()
	if err := e.fsys.MkdirAll(e.p(name), 0o755); err != nil {
		e.t.Fatalf("MkdirAll(%s): %v", name, err)
	}
}

func (e env) open(name string, flag int) vfs.File {
	e.t.Helper()
	f, err := e.fsys.OpenFile(e.p(name), flag, 0o644)
	if err != nil {
		e.t.Fatalf("OpenFile(%s, %#x): %v", name, flag, err)
	}
	e.t.Cleanup(func() { f.Close() })
	return f
}

func (e env) exists(name string) bool {
	e.t.Helper()
	_, err := e.fsys.Lstat(e.p(name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		e.t.Fatalf("Lstat(%s): %v", name, err)
	}
	return err == nil
}

func (e env) names(dir string) []string {
	e.t.Helper()
	ents, err := e.fsys.ReadDir(e.p(dir))
	if err != nil {
		e.t.Fatalf("ReadDir(%s): %v", dir, err)
	}
	out := []string{}
	for _, d := range ents {
		out = append(out, d.Name())
	}
	return out
}

// wantErr fails unless err matches target with errors.Is and is a
// *fs.PathError (or *os.LinkError when link is set), as the OS returns.
func wantErr(t *testing.T, what string, err error, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
		return
	}
	var pe *fs.PathError
	var le *os.LinkError
	if !errors.As(err, &pe) && !errors.As(err, &le) {
		t.Errorf("%s: got %T %v, want *fs.PathError or *os.LinkError", what, err, err)
	}
}

func wantLinkErr(t *testing.T, what string, err error, targets ...error) {
	t.Helper()
	var le *os.LinkError
	if !errors.As(err, &le) {
		t.Errorf("%s: got %T %v, want *os.LinkError", what, err, err)
		return
	}
	for _, target := range targets {
		if errors.Is(err, target) {
			return
		}
	}
	t.Errorf("%s: got error %v, want one of %v", what, err, targets)
}

func wantNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func readAll(t *testing.T, f io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(f)
	wantNoErr(t, "ReadAll", err)
	return string(b)
}

var (
	errNotDir   = syscall.ENOTDIR
	errIsDir    = syscall.EISDIR
	errNotEmpty = syscall.ENOTEMPTY
	errInvalid  = syscall.EINVAL
	errBadFD    = syscall.EBADF
	errLoop     = syscall.ELOOP
)
