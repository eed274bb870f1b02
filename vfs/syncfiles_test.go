package vfs_test

import (
	"errors"
	"os"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// putUnsynced writes name holding data, unsynced.
func putUnsynced(t *testing.T, fsys vfs.FS, name, data string) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	must(t, err)
	_, err = f.Write([]byte(data))
	must(t, err)
	must(t, f.Close())
}

func readOr(fsys vfs.FS, name string) string {
	b, err := vfs.ReadFile(fsys, name)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestMemSyncFilesCrash pins the model of the batched sync: SyncFiles
// makes the named files' contents durable and nothing else. A rewritten
// file keeps its new contents; a new file's name is still lost without
// SyncDir, and found with its contents after it; a file left out of the
// batch loses its new contents.
func TestMemSyncFilesCrash(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/d", 0o755))
	putUnsynced(t, m, "/d/old", "old")
	putUnsynced(t, m, "/d/other", "old")
	m.SyncAll()
	putUnsynced(t, m, "/d/old", "new")
	putUnsynced(t, m, "/d/other", "new")
	putUnsynced(t, m, "/d/created", "created")
	must(t, vfs.SyncFiles(m, []string{"/d/old", "/d/created"}))

	c := m.Clone()
	c.Crash()
	if got := readOr(c, "/d/old"); got != "new" {
		t.Errorf("synced file after a crash: %q, want %q", got, "new")
	}
	if got := readOr(c, "/d/other"); got != "old" {
		t.Errorf("file left out of the batch after a crash: %q, want %q", got, "old")
	}
	if _, err := c.Lstat("/d/created"); err == nil {
		t.Error("a new file's name survived the crash without SyncDir")
	}

	must(t, m.SyncDir("/d"))
	m.Crash()
	if got := readOr(m, "/d/created"); got != "created" {
		t.Errorf("new file after SyncFiles and SyncDir: %q, want %q", got, "created")
	}
}

// TestMemSyncFilesAllOrNothing: a batch naming something that is not a
// regular file fails and syncs none of the others.
func TestMemSyncFilesAllOrNothing(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/d/sub", 0o755))
	putUnsynced(t, m, "/d/f", "old")
	m.SyncAll()
	putUnsynced(t, m, "/d/f", "new")
	if err := vfs.SyncFiles(m, []string{"/d/f", "/d/sub"}); err == nil {
		t.Fatal("SyncFiles of a directory succeeded")
	}
	m.Crash()
	if got := readOr(m, "/d/f"); got != "old" {
		t.Errorf("after a failed batch and a crash: %q, want %q", got, "old")
	}
}

// TestFaultySyncFiles: a batch is one durable step, a rule can fail it,
// and a failed batch syncs nothing.
func TestFaultySyncFiles(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/d", 0o755))
	putUnsynced(t, m, "/d/a", "old")
	putUnsynced(t, m, "/d/b", "old")
	m.SyncAll()
	f := vfs.NewFaulty(m)
	putUnsynced(t, f, "/d/a", "new")
	putUnsynced(t, f, "/d/b", "new")
	f.ResetOps()
	rule := f.Fail(vfs.OpSyncFiles, "/d", vfs.ErrIO, vfs.Once())
	if err := vfs.SyncFiles(f, []string{"/d/a", "/d/b"}); !errors.Is(err, vfs.ErrIO) || rule.Hits() != 1 {
		t.Fatalf("SyncFiles under a rule = %v, %d hits; want EIO, 1", err, rule.Hits())
	}
	must(t, vfs.SyncFiles(f, []string{"/d/a", "/d/b"}))
	ops := f.DurableOps()
	if len(ops) != 2 || ops[0].Op != vfs.OpSyncFiles || ops[1].Op != vfs.OpSyncFiles {
		t.Fatalf("durable ops %v, want two syncfiles", ops)
	}
	m.Crash()
	if a, b := readOr(m, "/d/a"), readOr(m, "/d/b"); a != "new" || b != "new" {
		t.Errorf("after the batch and a crash: %q %q, want new new", a, b)
	}
}
