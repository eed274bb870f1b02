package capsule

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
	"github.com/google/go-cmp/cmp"
)

// mkTree creates files under root: a value ending in "->" followed by a
// target makes a symlink, "/" at the end of a key makes a directory, "x:"
// at the start of a value makes the file executable.
func mkTree(t *testing.T, root string, tree map[string]string) {
	t.Helper()
	for p, v := range tree {
		host := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(p, "/"):
			err := os.MkdirAll(host, 0o755)
			if err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(v, "->"):
			if err := os.Symlink(strings.TrimPrefix(v, "->"), host); err != nil {
				t.Fatal(err)
			}
		default:
			mode := os.FileMode(0o644)
			if body, ok := strings.CutPrefix(v, "x:"); ok {
				v, mode = body, 0o755
			}
			if err := os.WriteFile(host, []byte(v), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(host, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// FORMAT §5: snapshot then checkout reproduces the tree byte for byte,
// with exec bits, empty directories and inside links; ignored entries,
// escaping links and special files are left out, the last two with a warning.
func TestSnapshotCheckoutRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("diff not installed")
	}
	ws := filepath.Join(t.TempDir(), "ws")
	mkTree(t, ws, map[string]string{
		".capsuleignore":       "build/\n*.log\n!keep.log\n",
		"README.md":            "# project\n",
		"src/main.go":          "package main\n",
		"src/same.txt":         "same\n",
		"other/same.txt":       "same\n",
		"bin/run.sh":           "x:#!/bin/sh\necho run\n",
		"empty/":               "",
		"nested/empty/deeper/": "",
		"docs/link-to-readme":  "->../README.md",
		"docs/dirlink":         "->../src",
		"docs/dangling":        "->missing-inside",
		"big.bin":              strings.Repeat("0123456789abcdef", 1<<16),
		"keep.log":             "kept\n",
		"space name/ü.txt":     "unicode\n",
		"build/out.o":          "ignored",
		"debug.log":            "ignored",
		"escape-up":            "->../outside",
		"escape-abs":           "->/etc/passwd",
		"escape-via-link":      "->docs/dirlink/../../..",
	})
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCapsule(t)
	var warned []string
	res, err := c.SnapshotFrom(ws, SnapshotConfig{Workers: 2, Warn: func(p, reason string) { warned = append(warned, p) }})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(warned)
	if diff := cmp.Diff([]string{"escape-abs", "escape-up", "escape-via-link", "fifo"}, warned); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if res.Files != 9 || res.Symlinks != 3 || res.Dirs != 2 || res.Ignored != 2 || res.NewBlobs != 8 {
		t.Errorf("result %+v", res)
	}
	mustVerify(t, vfs.OS{}, c.Dir())

	out := filepath.Join(t.TempDir(), "out")
	if _, err := c.Checkout(out, CheckoutConfig{Workers: 2}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"build", "debug.log", "escape-up", "escape-abs", "escape-via-link", "fifo"} {
		if err := os.RemoveAll(filepath.Join(ws, p)); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := exec.Command("diff", "-r", "--no-dereference", ws, out).CombinedOutput(); err != nil {
		t.Fatalf("diff -r: %v\n%s", err, b)
	}
	for p, want := range map[string]os.FileMode{"bin/run.sh": 0o755, "README.md": 0o644, "src/main.go": 0o644} {
		fi, err := os.Lstat(filepath.Join(out, p))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", p, fi.Mode().Perm(), want, err)
		}
	}
	for p, want := range map[string]string{"docs/link-to-readme": "../README.md", "docs/dirlink": "../src", "docs/dangling": "missing-inside"} {
		if got, err := os.Readlink(filepath.Join(out, p)); err != nil || got != want {
			t.Errorf("%s -> %q, want %q (%v)", p, got, want, err)
		}
	}
	// Nothing is sent twice: a second snapshot of the same tree stores no blob,
	// and a one-file change stores exactly one.
	res, err = c.SnapshotFrom(ws, SnapshotConfig{})
	if err != nil || res.NewBlobs != 0 {
		t.Errorf("second snapshot stored %d blobs (%v)", res.NewBlobs, err)
	}
	mkTree(t, ws, map[string]string{"src/main.go": "package main // changed\n"})
	res, err = c.SnapshotFrom(ws, SnapshotConfig{})
	if err != nil || res.NewBlobs != 1 {
		t.Errorf("snapshot after one change stored %d blobs (%v)", res.NewBlobs, err)
	}
}

func TestCheckoutRefusesNonEmptyAndCorruptBlob(t *testing.T) {
	c := newCapsule(t)
	populate(t, c)
	full := t.TempDir()
	mkTree(t, full, map[string]string{"x": "x"})
	if _, err := c.Checkout(full, CheckoutConfig{}); !errors.Is(err, ErrExists) {
		t.Errorf("checkout into a non-empty dir: %v", err)
	}
	writeOver(t, blobPath(c, "hello\n"), []byte("HELLO\n"))
	out := filepath.Join(t.TempDir(), "out")
	_, err := c.Checkout(out, CheckoutConfig{})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("checkout of a corrupt blob: got %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed checkout left %s behind", out)
	}
	ents, _ := os.ReadDir(filepath.Dir(out))
	if len(ents) != 0 {
		t.Errorf("staging left behind: %v", ents)
	}
}

// FORMAT §5: files are streamed, never held whole: recording and checking
// out a 64 MiB file allocates a small fraction of it.
func TestSnapshotStreams(t *testing.T) {
	ws := t.TempDir()
	const size = 64 << 20
	f, err := os.Create(filepath.Join(ws, "huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil { // sparse: fast to make
		t.Fatal(err)
	}
	f.Close()
	c := newCapsule(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := c.SnapshotFrom(ws, SnapshotConfig{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Checkout(filepath.Join(t.TempDir(), "out"), CheckoutConfig{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Errorf("allocated %d bytes to record and check out a %d-byte file", alloc, size)
	}
}

func TestParseSnapshotProblems(t *testing.T) {
	d := digest.FromString("x")
	tests := []struct {
		name string
		s    Snapshot
		want string
	}{
		{"unsorted", Snapshot{Version: 1, Entries: []Entry{{Path: "b", Type: TypeDir}, {Path: "a", Type: TypeDir}}}, "out of order"},
		{"duplicate", Snapshot{Version: 1, Entries: []Entry{{Path: "a", Type: TypeDir}, {Path: "a", Type: TypeDir}}}, "out of order or repeated"},
		{"traversal", Snapshot{Version: 1, Entries: []Entry{{Path: "../a", Type: TypeDir}}}, `".." component`},
		{"absolute", Snapshot{Version: 1, Entries: []Entry{{Path: "/etc/passwd", Type: TypeFile, Blob: d}}}, "absolute"},
		{"below a file", Snapshot{Version: 1, Entries: []Entry{{Path: "a", Type: TypeFile, Blob: d}, {Path: "a/b", Type: TypeFile, Blob: d}}}, `lies below the file "a"`},
		{"below a link", Snapshot{Version: 1, Entries: []Entry{{Path: "l", Type: TypeSymlink, Target: "."}, {Path: "l/x", Type: TypeFile, Blob: d}}}, `lies below the symlink "l"`},
		{"escaping link", Snapshot{Version: 1, Entries: []Entry{{Path: "a/l", Type: TypeSymlink, Target: "../../x"}}}, "target leaves the tree"},
		{"escape through a link", Snapshot{Version: 1, Entries: []Entry{{Path: "d", Type: TypeSymlink, Target: "."}, {Path: "e", Type: TypeSymlink, Target: "d/d/.."}}}, `symlink "e": target leaves`},
		{"link loop", Snapshot{Version: 1, Entries: []Entry{{Path: "a", Type: TypeSymlink, Target: "b/x"}, {Path: "b", Type: TypeSymlink, Target: "a/x"}}}, "target leaves"},
		{"absolute link", Snapshot{Version: 1, Entries: []Entry{{Path: "l", Type: TypeSymlink, Target: "/etc"}}}, "non-empty relative path"},
		{"file without blob", Snapshot{Version: 1, Entries: []Entry{{Path: "f", Type: TypeFile}}}, "is not a sha256 digest"},
		{"unknown type", Snapshot{Version: 1, Entries: []Entry{{Path: "f", Type: "fifo"}}}, `unknown type "fifo"`},
		{"newer version", Snapshot{Version: 2, Entries: []Entry{}}, "version 2 is not one this release reads"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			if !errors.Is(err, ErrBadSnapshot) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrBadSnapshot mentioning %q", err, tc.want)
			}
		})
	}
	for in, want := range map[string]string{
		`{"version": 1, "entries": [}`:              "1:28",
		`{"version": 1, "entries": [], "extra": 1}`: `unknown field "extra"`,
		`{"version": "1"}`:                          "1:16",
	} {
		if _, err := ParseSnapshot([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSnapshot(%s) = %v, want %q", in, err, want)
		}
	}
}

// FORMAT §4.4: a crash at any point of a snapshot on vfs.Mem leaves the
// old snapshot or the new one, and the capsule verifies.
func TestCrashDuringSnapshot(t *testing.T) {
	vfstest.ForEachCrashPoint(t,
		func(t testing.TB, fsys vfs.FS) {
			if _, err := Init(fsys, "/cap", testConfig()); err != nil {
				t.Fatal(err)
			}
			for p, body := range map[string]string{"/ws/a.txt": "a\n", "/ws/sub/b.txt": "b\n", "/ws/sub/c.txt": "a\n"} {
				if err := vfs.MkdirAllDurable(fsys, filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := vfs.WriteFile(fsys, p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		},
		func(fsys vfs.FS) error {
			c, err := Open(fsys, "/cap", Config{})
			if err != nil {
				return err
			}
			_, err = c.SnapshotFrom("/ws", SnapshotConfig{Workers: 1})
			return err
		},
		func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
			c := checkRecovers(t, fsys, "/cap")
			s, err := c.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if n := s.Stats().Files; n != 0 && n != 3 || at.Done() && n != 3 {
				t.Fatalf("snapshot has %d files", n)
			}
		})
}

// FORMAT §5.3: a capsule inside the workspace it records is left out
// with a warning, however the two folders are named (relative or
// absolute, through ".."), and nothing beside it is.
func TestSnapshotLeavesOutTheCapsuleItself(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	mkTree(t, ws, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n", "sub/cap-not/c.txt": "c\n"})
	t.Chdir(root)
	for _, tc := range []struct{ ws, cap string }{
		{ws, filepath.Join(ws, "sub", "cap")},
		{"ws", "ws/sub/cap2"},
		{"./ws/../ws", filepath.Join("ws", "sub", "..", "sub", "cap3")},
	} {
		c, err := Init(vfs.OS{}, tc.cap, testConfig())
		if err != nil {
			t.Fatal(err)
		}
		var warned []string
		res, err := c.SnapshotFrom(tc.ws, SnapshotConfig{Warn: func(p, reason string) { warned = append(warned, p+": "+reason) }})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"sub/" + filepath.Base(tc.cap) + ": the capsule itself"}
		if diff := cmp.Diff(want, warned); diff != "" {
			t.Errorf("ws %q, capsule %q: warnings (-want +got):\n%s", tc.ws, tc.cap, diff)
		}
		// Every capsule made so far lies in the tree; only this one is left out.
		if wantFiles := 1 + countFiles(t, filepath.Join(ws, "sub")) - countFiles(t, tc.cap); res.Files != wantFiles {
			t.Errorf("ws %q, capsule %q: %d files recorded, want %d", tc.ws, tc.cap, res.Files, wantFiles)
		}
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
