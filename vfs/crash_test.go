package vfs_test

import (
	"errors"
	"regexp"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

func writeOld(t testing.TB, fsys vfs.FS) {
	if err := fsys.MkdirAll("/cap", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFile(fsys, "/cap/f", []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeNew(fsys vfs.FS) error {
	return vfs.WriteFile(fsys, "/cap/f", []byte("new"), 0o644)
}

// TestWriteFileCrashAtomic is the atomic-write promise of vfs.WriteFile: a
// crash at any point leaves the old or the new contents, never a mix or
// nothing, and once WriteFile returned the new contents survive.
func TestWriteFileCrashAtomic(t *testing.T) {
	old := map[string]string{"cap/": "", "cap/f": "old"}
	updated := map[string]string{"cap/": "", "cap/f": "new"}
	var seen []string
	vfstest.ForEachCrashPoint(t, writeOld, writeNew, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		got := vfstest.DropTemp(vfstest.Snapshot(t, fsys, "/"))
		if at.Done() && !cmp.Equal(got, updated) {
			t.Errorf("%v: got %v, want the new state", at, got)
		}
		if !cmp.Equal(got, old) && !cmp.Equal(got, updated) {
			t.Errorf("%v: got %v, want the old or the new state", at, got)
		}
		if !at.Done() && !errors.Is(at.Err, vfs.ErrCrashed) {
			t.Errorf("%v: op returned %v, want an error wrapping ErrCrashed", at, at.Err)
		}
		if len(seen) == 0 || seen[len(seen)-1] != at.Where() {
			seen = append(seen, at.Where())
		}
	})
	want := []string{
		"after 0 of 3 durable steps, before sync /cap/.tmp-f-*",
		"after 1 of 3 durable steps, before rename /cap/.tmp-f-* -> /cap/f",
		"after 2 of 3 durable steps, before syncdir /cap",
		"after 3 of 3 durable steps",
	}
	if diff := cmp.Diff(want, seen, cmp.Transformer("untemp", untemp)); diff != "" {
		t.Errorf("crash points (-want +got):\n%s", diff)
	}
}

// untemp hides the sequence number of WriteFile's temporary names.
func untemp(s string) string {
	return tempName.ReplaceAllString(s, "/cap/.tmp-f-*")
}

var tempName = regexp.MustCompile(`/cap/\.tmp-f-[0-9a-z*]+`)

// TestWriteFileCrashNewFile: a new file is absent or complete.
func TestWriteFileCrashNewFile(t *testing.T) {
	setup := func(t testing.TB, fsys vfs.FS) {
		if err := fsys.MkdirAll("/cap", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	vfstest.ForEachCrashPoint(t, setup, writeNew, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		got := vfstest.DropTemp(vfstest.Snapshot(t, fsys, "/cap"))
		if at.Done() {
			if got["f"] != "new" {
				t.Errorf("%v: f = %q, want new", at, got["f"])
			}
			return
		}
		if v, ok := got["f"]; ok && v != "new" {
			t.Errorf("%v: f = %q, want absent or new", at, v)
		}
	})
}

// TestForEachCrashPointRevealsMissingSyncDir runs an op that forgets to sync
// the directory after its rename and checks that the completed run's crash
// shows both outcomes of the rename: lost (what a check would catch) and
// kept.
func TestForEachCrashPointRevealsMissingSyncDir(t *testing.T) {
	sloppy := func(fsys vfs.FS) error {
		if err := vfs.WriteFile(fsys, "/cap/tmp", []byte("new"), 0o644); err != nil {
			return err
		}
		return fsys.Rename("/cap/tmp", "/cap/f") // no SyncDir: not durable
	}
	var done []string
	vfstest.ForEachCrashPoint(t, writeOld, sloppy, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		if at.Done() {
			done = append(done, vfstest.Snapshot(t, fsys, "/cap")["f"])
		}
	})
	sort.Strings(done)
	if diff := cmp.Diff([]string{"new", "old"}, done); diff != "" {
		t.Errorf("completed run after crash (-want +got):\n%s", diff)
	}
}

// TestMkdirAllDurableCrash: each level of the path becomes durable with the
// sync of its parent, in order, so a crash after k syncs leaves k levels,
// or k+1 when the next mkdir survived on its own.
func TestMkdirAllDurableCrash(t *testing.T) {
	levels := []string{"a/", "a/b/", "a/b/c/"}
	op := func(fsys vfs.FS) error { return vfs.MkdirAllDurable(fsys, "/a/b/c", 0o755) }
	vfstest.ForEachCrashPoint(t, nil, op, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		if at.Total != len(levels) {
			t.Fatalf("%d durable steps, want %d", at.Total, len(levels))
		}
		want, n := map[string]string{}, at.Index
		if len(at.Kept) == 1 && at.Kept[0] {
			n++
		}
		for _, l := range levels[:n] {
			want[l] = ""
		}
		if diff := cmp.Diff(want, vfstest.Snapshot(t, fsys, "/")); diff != "" {
			t.Errorf("%v (-want +got):\n%s", at, diff)
		}
	})
}
