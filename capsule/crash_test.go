package capsule

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// checkRecovers verifies the capsule at dir as a crash left it (read only),
// then opens it (which recovers) and verifies again: no problem either
// time, and after the open no leftover but unreferenced blobs.
func checkRecovers(t *testing.T, fsys vfs.FS, dir string) *Capsule {
	t.Helper()
	r, err := Verify(fsys, dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("after the crash, before recovery: %v", r.Problems)
	}
	c, err := Open(fsys, dir, Config{})
	if err != nil {
		t.Fatalf("open after the crash: %v", err)
	}
	r, err = Verify(fsys, dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("after recovery: %v", r.Problems)
	}
	for _, w := range r.Warnings {
		if w.Kind != KindUnreferenced && w.Kind != KindUnchecked {
			t.Errorf("after recovery: warning %v", w)
		}
	}
	return c
}

// FORMAT §4.4: a crash at any point of init leaves no capsule or a whole one.
func TestCrashDuringInit(t *testing.T) {
	vfstest.ForEachCrashPoint(t,
		func(t testing.TB, fsys vfs.FS) {
			if err := fsys.MkdirAll("/agents", 0o755); err != nil {
				t.Fatal(err)
			}
		},
		func(fsys vfs.FS) error { _, err := Init(fsys, "/agents/cap", testConfig()); return err },
		func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
			if _, err := fsys.Stat("/agents/cap/manifest.json"); errors.Is(err, fs.ErrNotExist) {
				if at.Done() {
					t.Fatal("init completed but there is no capsule")
				}
				ents, _ := fsys.ReadDir("/agents/cap")
				if len(ents) > 0 {
					t.Fatalf("a partial capsule is visible: %d entries", len(ents))
				}
				return
			}
			c := checkRecovers(t, fsys, "/agents/cap")
			if c.ID() != testConfig().ID {
				t.Errorf("ID %s", c.ID())
			}
		})
}

// state is what a commit test changes, to tell old from new.
type state struct {
	working string
	holder  manifest.Holder
	events  int64
	files   int
}

func readState(t *testing.T, c *Capsule) state {
	t.Helper()
	wm, err := c.WorkingMemory()
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	m := c.Manifest()
	return state{working: string(wm), holder: m.Holder, events: m.Journal.Events, files: s.Stats().Files}
}

const commitDir = "/cap"

var (
	oldState = state{working: "notes\n", holder: manifest.Holder{}, events: 2, files: 3}
	newState = state{working: "new notes\n", holder: manifest.Holder{Node: "n1", Epoch: 1}, events: 3, files: 4}
)

// setupCommit builds the capsule TestCrashDuringCommit commits to, with a
// signature the commit must remove.
func setupCommit(t testing.TB, fsys vfs.FS) {
	c, err := Init(fsys, commitDir, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	populate(t.(*testing.T), c)
	if err := vfs.WriteFile(fsys, commitDir+"/manifest.json.sig", []byte("sig"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// commitNew appends to the journal and commits a commit that adds a blob
// and replaces the snapshot, the working memory and the holder: oldState
// becomes newState.
func commitNew(fsys vfs.FS) error {
	line := []byte("{\"n\":3}\n")
	c, err := Open(fsys, commitDir, Config{})
	if err != nil {
		return err
	}
	if err := appendDurably(fsys, commitDir+"/"+manifest.JournalPath, line); err != nil {
		return err
	}
	return c.Commit(func(tx *Tx) error {
		d, n, err := tx.PutBlob(strings.NewReader("a new file\n"))
		if err != nil {
			return err
		}
		s, err := c.Snapshot()
		if err != nil {
			return err
		}
		s.Entries = append(s.Entries, Entry{Path: "new.txt", Type: TypeFile, Size: n, Blob: d})
		if err := tx.SetSnapshot(s); err != nil {
			return err
		}
		j := c.Manifest().Journal
		all := append(append([]byte{}, journalLines...), line...)
		j.Events, j.Bytes, j.Digest = 3, int64(len(all)), digest.FromBytes(all)
		j.Heads = map[string]manifest.Head{"m1": {Seq: 3, ID: string(digest.FromString("e3")), Clock: 3}}
		if err := tx.SetJournal(j); err != nil {
			return err
		}
		tx.SetHolder(manifest.Holder{Node: "n1", Epoch: 1})
		return tx.SetWorkingMemory([]byte("new notes\n"))
	})
}

// checkOldOrNew is the check of TestCrashDuringCommit: the capsule
// verifies before and after recovery and holds the old state or the new
// one (want, when set, is the only one allowed).
func checkOldOrNew(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint, want *state) {
	c := checkRecovers(t, fsys, commitDir)
	got := readState(t, c)
	if got != oldState && got != newState {
		t.Fatalf("state after crash %s is neither old nor new: %+v", at, got)
	}
	if want != nil && got != *want {
		t.Fatalf("%s: state %+v, want %+v", at, got, *want)
	}
	if at.Done() && want == nil && got != newState {
		t.Fatalf("complete commit left the old state")
	}
	if got == newState {
		if _, err := fsys.Stat(commitDir + "/manifest.json.sig"); !errors.Is(err, fs.ErrNotExist) {
			t.Error("the new state kept a stale signature")
		}
	}
}

// FORMAT §4.2-4.4: a crash at any durable step of a commit that appends
// to the journal, adds a blob, and replaces the snapshot, the working
// memory and the holder leaves the old state or the new one, and both
// verify. Moving the manifest into place before the staged files fails
// this test (a rename may become durable on its own).
func TestCrashDuringCommit(t *testing.T) {
	vfstest.ForEachCrashPoint(t, setupCommit, commitNew, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		checkOldOrNew(t, fsys, at, nil)
	})
}

// FORMAT §4.3: recovery is itself crash safe. A commit is cut (every
// unsynced change lost) just before its staged manifest is written, or
// just before it is moved into place; then a crash at any durable step of
// the recovery that Open performs leaves the old state (the commit did not
// happen) or the new one (it did), and a later Open completes it.
func TestCrashDuringRecovery(t *testing.T) {
	cuts := []struct {
		name string
		at   func(vfs.OpRecord) bool
		want state
	}{
		{"before the commit point", func(r vfs.OpRecord) bool {
			return r.Op == vfs.OpCreate && strings.Contains(r.Path, PendingDir+"/"+vfs.TempPrefix+manifest.FileName)
		}, oldState},
		{"after the commit point", func(r vfs.OpRecord) bool {
			return r.Op == vfs.OpRename && strings.Contains(r.Path, "/"+PendingDir+"/") &&
				!strings.HasPrefix(filepath.Base(r.Path), vfs.TempPrefix)
		}, newState},
		{"before the manifest moves", func(r vfs.OpRecord) bool {
			return r.Op == vfs.OpRename && r.NewPath == commitDir+"/"+manifest.FileName
		}, newState},
	}
	for _, cut := range cuts {
		t.Run(cut.name, func(t *testing.T) {
			setup := func(t testing.TB, fsys vfs.FS) {
				setupCommit(t, fsys)
				mem := fsys.(*vfs.Mem)
				mem.SyncAll()
				faulty, reached := vfs.NewFaulty(mem), false
				faulty.OnOp(func(r vfs.OpRecord) error {
					reached = reached || cut.at(r)
					if reached {
						return vfs.ErrCrashed
					}
					return nil
				})
				if err := commitNew(faulty); !errors.Is(err, vfs.ErrCrashed) || !reached {
					t.Fatalf("the commit was not cut: %v", err)
				}
				mem.Crash()
				if _, err := fsys.Stat(commitDir + "/" + PendingDir); err != nil {
					t.Fatalf("no commit to recover: %v", err)
				}
			}
			open := func(fsys vfs.FS) error {
				_, err := Open(fsys, commitDir, Config{})
				return err
			}
			vfstest.ForEachCrashPoint(t, setup, open, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
				checkOldOrNew(t, fsys, at, &cut.want)
			})
		})
	}
}

func appendDurably(fsys vfs.FS, name string, b []byte) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
