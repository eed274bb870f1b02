package vfs_test

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// step is one action on a Mem in a crash-model table test; it fails the
// test on an unexpected error.
type step func(t *testing.T, m *vfs.Mem)

// put writes data to name (created or truncated) without any sync.
func put(name, data string) step {
	return func(t *testing.T, m *vfs.Mem) {
		t.Helper()
		f, err := m.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		must(t, err)
		_, err = f.Write([]byte(data))
		must(t, err)
		must(t, f.Close())
	}
}

// fsync opens name and syncs it.
func fsync(name string) step {
	return func(t *testing.T, m *vfs.Mem) {
		t.Helper()
		f, err := m.OpenFile(name, os.O_RDONLY, 0)
		must(t, err)
		must(t, f.Sync())
		must(t, f.Close())
	}
}

func syncDir(name string) step {
	return func(t *testing.T, m *vfs.Mem) { t.Helper(); must(t, m.SyncDir(name)) }
}

func mkdir(name string) step {
	return func(t *testing.T, m *vfs.Mem) { t.Helper(); must(t, m.Mkdir(name, 0o755)) }
}

func rename(oldname, newname string) step {
	return func(t *testing.T, m *vfs.Mem) { t.Helper(); must(t, m.Rename(oldname, newname)) }
}

func remove(name string) step {
	return func(t *testing.T, m *vfs.Mem) { t.Helper(); must(t, m.Remove(name)) }
}

func removeAll(name string) step {
	return func(t *testing.T, m *vfs.Mem) { t.Helper(); must(t, m.RemoveAll(name)) }
}

func symlink(target, name string) step {
	return func(t *testing.T, m *vfs.Mem) { t.Helper(); must(t, m.Symlink(target, name)) }
}

func truncate(name string, size int64) step {
	return func(t *testing.T, m *vfs.Mem) {
		t.Helper()
		f, err := m.OpenFile(name, os.O_WRONLY, 0)
		must(t, err)
		must(t, f.Truncate(size))
		must(t, f.Close())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMemCrashModel checks what survives Crash after each sequence of
// operations, starting from a durable tree with /a = "A" and /d/x = "X".
func TestMemCrashModel(t *testing.T) {
	base := map[string]string{"a": "A", "d/": "", "d/x": "X"}
	with := func(kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<gone>" {
				delete(out, kv[i])
			} else {
				out[kv[i]] = kv[i+1]
			}
		}
		return out
	}
	tests := []struct {
		name  string
		steps []step
		want  map[string]string
	}{
		{"nothing synced is lost", []step{put("/n", "N"), mkdir("/e"), put("/a", "A2")}, base},
		{"new file, entry synced, data not", []step{put("/n", "N"), syncDir("/")}, with("n", "")},
		{"new file, data synced, entry not", []step{put("/n", "N"), fsync("/n")}, base},
		{"new file fully synced", []step{put("/n", "N"), fsync("/n"), syncDir("/")}, with("n", "N")},
		{"overwrite unsynced", []step{put("/a", "A2")}, base},
		{"overwrite synced", []step{put("/a", "A2"), fsync("/a")}, with("a", "A2")},
		{"truncate unsynced", []step{truncate("/a", 0)}, base},
		{"rename unsynced", []step{rename("/a", "/b")}, base},
		{"rename synced", []step{rename("/a", "/b"), syncDir("/")}, with("a", "<gone>", "b", "A")},
		{"rename over file synced", []step{put("/d/t", "T"), fsync("/d/t"), rename("/d/t", "/d/x"), syncDir("/d")}, with("d/x", "T")},
		{"rename across dirs, only target synced", []step{rename("/a", "/d/a"), syncDir("/d")}, with("a", "<gone>", "d/a", "A")},
		{"rename across dirs, only source synced", []step{rename("/a", "/d/a"), syncDir("/")}, with("a", "<gone>", "d/a", "A")},
		{"rename across dirs, both synced", []step{rename("/a", "/d/a"), syncDir("/d"), syncDir("/")}, with("a", "<gone>", "d/a", "A")},
		{"remove unsynced", []step{remove("/a")}, base},
		{"remove synced", []step{remove("/a"), syncDir("/")}, with("a", "<gone>")},
		{"removeall unsynced", []step{removeAll("/d")}, base},
		{"removeall synced", []step{removeAll("/d"), syncDir("/")}, with("d/", "<gone>", "d/x", "<gone>")},
		{"new dir never synced in parent", []step{mkdir("/e"), put("/e/f", "F"), fsync("/e/f"), syncDir("/e")}, base},
		{"new dir synced, its entries not", []step{mkdir("/e"), put("/e/f", "F"), fsync("/e/f"), syncDir("/")}, with("e/", "")},
		{"new dir and entries synced", []step{mkdir("/e"), put("/e/f", "F"), fsync("/e/f"), syncDir("/e"), syncDir("/")}, with("e/", "", "e/f", "F")},
		{"dir handle sync is syncdir", []step{put("/n", "N"), fsync("/n"), fsync("/")}, with("n", "N")},
		{"symlink unsynced", []step{symlink("a", "/l")}, base},
		{"symlink synced", []step{symlink("a", "/l"), syncDir("/")}, with("l", "-> a")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newBaseMem(t)
			for _, s := range tc.steps {
				s(t, m)
			}
			durable := vfstest.Snapshot(t, m.Durable(), "/")
			m.Crash()
			got := vfstest.Snapshot(t, m, "/")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("after crash (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, durable); diff != "" {
				t.Errorf("Durable() disagrees with Crash (-crash +durable):\n%s", diff)
			}
		})
	}
}

func newBaseMem(t *testing.T) *vfs.Mem {
	m := vfs.NewMem()
	must(t, m.Mkdir("/d", 0o755))
	put("/a", "A")(t, m)
	put("/d/x", "X")(t, m)
	m.SyncAll()
	return m
}

func TestMemCrashInvalidatesHandles(t *testing.T) {
	m := newBaseMem(t)
	f, err := m.OpenFile("/a", os.O_RDWR, 0)
	must(t, err)
	m.Crash()
	_, err = f.Write([]byte("x"))
	if !errors.Is(err, vfs.ErrCrashed) {
		t.Errorf("Write after Crash: %v, want ErrCrashed", err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, vfs.ErrCrashed) {
		t.Errorf("Read after Crash: %v, want ErrCrashed", err)
	}
	if err := f.Sync(); !errors.Is(err, vfs.ErrCrashed) {
		t.Errorf("Sync after Crash: %v, want ErrCrashed", err)
	}
	if err := f.Close(); !errors.Is(err, vfs.ErrCrashed) {
		t.Errorf("Close after Crash: %v, want ErrCrashed", err)
	}
	g, err := m.OpenFile("/a", os.O_RDWR, 0)
	must(t, err)
	_, err = g.Write([]byte("new handle"))
	must(t, err)
	must(t, g.Close())
}

func TestMemCrashModeBits(t *testing.T) {
	m := newBaseMem(t)
	must(t, m.Chmod("/a", 0o755))
	must(t, m.Chmod("/d/x", 0o700))
	must(t, m.SyncDir("/")) // makes /a's metadata durable, not /d/x's
	m.Crash()
	for name, want := range map[string]fs.FileMode{"/a": 0o755, "/d/x": 0o644} {
		fi, err := m.Stat(name)
		must(t, err)
		if fi.Mode() != want {
			t.Errorf("%s after crash: mode %v, want %v", name, fi.Mode(), want)
		}
	}
}

// TestMemCrashNoCycle: a directory rename needs every change before it,
// so syncing one side of the second rename below also keeps the first, and
// no crash makes a directory its own ancestor.
func TestMemCrashNoCycle(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/a/b", 0o755))
	m.SyncAll()
	must(t, m.Rename("/a/b", "/b"))
	must(t, m.Rename("/a", "/b/a"))
	must(t, m.SyncDir("/b")) // without the first rename: a has b, b has a
	m.Crash()
	got := vfstest.Snapshot(t, m, "/")
	want := map[string]string{"b/": "", "b/a/": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after crash (-want +got):\n%s", diff)
	}
}

func TestMemCloneIsIndependent(t *testing.T) {
	m := newBaseMem(t)
	put("/unsynced", "U")(t, m)
	c := m.Clone()
	put("/a", "changed")(t, m)
	if got := vfstest.Snapshot(t, c, "/"); got["a"] != "A" || got["unsynced"] != "U" {
		t.Errorf("clone sees later changes or misses unsynced state: %v", got)
	}
	c.Crash()
	if got := vfstest.Snapshot(t, c, "/"); got["unsynced"] != "" || got["a"] != "A" {
		t.Errorf("clone after crash = %v", got)
	}
	if got := vfstest.Snapshot(t, m, "/"); got["a"] != "changed" || got["unsynced"] != "U" {
		t.Errorf("crashing the clone changed the original: %v", got)
	}
}

func TestMemPathErrors(t *testing.T) {
	m := newBaseMem(t)
	_, err := m.Open("/a/b")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != "/a/b" {
		t.Errorf("Open(/a/b) = %#v, want *fs.PathError{open /a/b}", err)
	}
	err = m.Rename("/nope", "/x")
	var le *os.LinkError
	if !errors.As(err, &le) || le.Old != "/nope" || le.New != "/x" || !os.IsNotExist(err) {
		t.Errorf("Rename(/nope) = %#v, want *os.LinkError ENOENT", err)
	}
	if err := m.Mkdir("/a", 0o755); !os.IsExist(err) {
		t.Errorf("Mkdir(/a) = %v, want os.IsExist", err)
	}
	if _, err := m.Stat("relative/../a"); err != nil {
		t.Errorf("Stat(relative/../a): %v", err)
	}
}
