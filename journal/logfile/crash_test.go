package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// TestAppendCrashPoints crashes at every durable step of creating a journal
// and appending three events (FORMAT §7.8), in every outcome of the
// unsynced changes: afterwards the journal opens, verifies, and holds every
// acknowledged event and nothing else but a prefix of the three. A last
// line is quarantined only where the crash tore an append.
func TestAppendCrashPoints(t *testing.T) {
	var acked int
	op := func(fsys vfs.FS) error {
		acked = 0
		l, err := Open(Config{FS: fsys, Path: jpath, Epoch: 1})
		if err != nil {
			return err
		}
		for i := 0; i < 3; i++ {
			if _, err := l.Append("m1", journal.KindUser, 1, "", user(fmt.Sprint(i))); err != nil {
				return err
			}
			acked++
		}
		return l.Close()
	}
	vfstest.ForEachCrashPoint(t, nil, op, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		events := reopenAfterCrash(t, fsys, at, 1)
		if len(events) < acked || len(events) > 3 {
			t.Errorf("%v: %d events after %d acknowledged appends", at, len(events), acked)
		}
		for i, e := range events {
			if want := fmt.Sprintf(`{"text":"%d"}`, i); string(e.Body) != want {
				t.Errorf("%v: event %d body %s, want %s", at, i, e.Body, want)
			}
		}
	})
}

// TestImportCrashPoints crashes at every durable step of importing sealed
// events in two batches onto a journal that holds one event (FORMAT §7.8),
// in every outcome of the unsynced changes: the journal then opens and
// verifies, keeps its own event, and holds every acknowledged import and
// otherwise a prefix of the imported events.
func TestImportCrashPoints(t *testing.T) {
	tail := sealedElsewhere(t, 3)
	setup := func(t testing.TB, fsys vfs.FS) {
		l, err := Open(Config{FS: fsys, Path: jpath, Epoch: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append("dst", journal.KindUser, 2, "", user("own")); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	var acked int
	op := func(fsys vfs.FS) error {
		acked = 0
		l, err := Open(Config{FS: fsys, Path: jpath, Epoch: 2})
		if err != nil {
			return err
		}
		for _, batch := range [][]journal.Event{tail[:2], tail} {
			n, err := l.Import(batch)
			if err != nil {
				return err
			}
			acked += n
		}
		return l.Close()
	}
	vfstest.ForEachCrashPoint(t, setup, op, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		events := reopenAfterCrash(t, fsys, at, 2)
		if len(events) == 0 || events[0].Machine != "dst" {
			t.Fatalf("%v: the journal's own event is lost: %d events", at, len(events))
		}
		imported := events[1:]
		if len(imported) < acked || len(imported) > len(tail) {
			t.Errorf("%v: %d events imported after %d acknowledged", at, len(imported), acked)
		}
		for i, e := range imported {
			if e.ID != tail[i].ID {
				t.Errorf("%v: imported event %d is %s, want %s", at, i, e.ID, tail[i].ID)
			}
		}
		if at.Done() && len(imported) != len(tail) {
			t.Errorf("%v: %d of %d events after the import completed", at, len(imported), len(tail))
		}
	})
}

// tornAt reports whether the crash kept part of an append, and not all.
func tornAt(at vfstest.CrashPoint) bool {
	for i, c := range at.Unsynced {
		if c.Kind == vfs.ChangeTorn && at.Kept[i] && !keptWhole(at, i) {
			return true
		}
	}
	return false
}

// keptWhole reports whether the crash kept the whole write that needs the
// torn write i.
func keptWhole(at vfstest.CrashPoint, i int) bool {
	for j, c := range at.Unsynced {
		if c.Kind == vfs.ChangeWrite && at.Kept[j] && slices.Contains(c.Needs, i) {
			return true
		}
	}
	return false
}

// TestQuarantineCrashPoints crashes at every durable step of the recovery
// of a torn last line: the line is never lost (it is in the journal or in
// a quarantine file) and the good events always survive.
func TestQuarantineCrashPoints(t *testing.T) {
	const torn = `{"body":{"text":"half`
	var good []byte
	setup := func(t testing.TB, fsys vfs.FS) {
		l, err := Open(Config{FS: fsys, Path: jpath})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if _, err := l.Append("m1", journal.KindUser, 0, "", user(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		good, _ = vfs.ReadFile(fsys, jpath)
		if err := vfs.WriteFile(fsys, jpath, append(bytes.Clone(good), torn...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	op := func(fsys vfs.FS) error {
		l, err := Open(Config{FS: fsys, Path: jpath})
		if err != nil {
			return err
		}
		return l.Close()
	}
	vfstest.ForEachCrashPoint(t, setup, op, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		data, _ := vfs.ReadFile(fsys, jpath)
		q, qerr := vfs.ReadFile(fsys, jpath+QuarantineSuffix+"1")
		switch {
		case bytes.Equal(data, append(bytes.Clone(good), torn...)):
			// Before the cut: the line is still in the journal (and maybe
			// already in quarantine too, which the next open repeats).
		case bytes.Equal(data, good) && qerr == nil && string(q) == torn:
		default:
			t.Fatalf("%v: journal %q, quarantine %q (%v)", at, data, q, qerr)
		}
		l, err := Open(Config{FS: fsys, Path: jpath})
		if err != nil {
			t.Fatalf("%v: reopen: %v", at, err)
		}
		l.Close()
		if n := len(readJournal(t, fsys)); n != 2 {
			t.Errorf("%v: %d events, want 2", at, n)
		}
	})
}

// TestFailedWriteIsUndone: a write or sync that fails (ENOSPC, EIO) fails
// the appends of its batch and leaves the file as it was, so the next
// append continues the chain.
func TestFailedWriteIsUndone(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync} {
		t.Run(string(op), func(t *testing.T) {
			mem := vfs.NewMem()
			faulty := vfs.NewFaulty(mem)
			l := open(t, faulty, 0)
			first, err := l.Append("m1", journal.KindUser, 0, "", user("kept"))
			if err != nil {
				t.Fatal(err)
			}
			before := l.Summary()
			faulty.Fail(op, "timeline_events.jsonl", vfs.ErrNoSpace, vfs.Once(), vfs.AfterEffect())
			if _, err := l.Append("m1", journal.KindUser, 0, "", user("lost")); !errors.Is(err, vfs.ErrNoSpace) {
				t.Fatalf("got %v, want ENOSPC", err)
			}
			if got := l.Summary(); !got.Equal(before) {
				t.Errorf("summary moved after a failed append: %+v", got)
			}
			next, err := l.Append("m1", journal.KindUser, 0, "", user("next"))
			if err != nil || next.Prev != first.ID || next.Seq != 2 {
				t.Fatalf("append after failure: %v, seq %d prev %s", err, next.Seq, next.Prev)
			}
			if n := len(readJournal(t, mem)); n != 2 {
				t.Errorf("%d events on disk, want 2", n)
			}
		})
	}
}

// TestBrokenAfterFailedUndo: when even cutting the file back fails, the log
// refuses further appends instead of writing after bytes no one vouches for.
func TestBrokenAfterFailedUndo(t *testing.T) {
	mem := vfs.NewMem()
	faulty := vfs.NewFaulty(mem)
	l := open(t, faulty, 0)
	faulty.Fail(vfs.OpSync, "timeline_events.jsonl", vfs.ErrIO)
	faulty.Fail(vfs.OpTruncate, "timeline_events.jsonl", vfs.ErrIO)
	if _, err := l.Append("m1", journal.KindUser, 0, "", user("x")); !errors.Is(err, vfs.ErrIO) {
		t.Fatalf("got %v, want EIO", err)
	}
	faulty.Clear()
	if _, err := l.Append("m1", journal.KindUser, 0, "", user("y")); !errors.Is(err, ErrBroken) {
		t.Fatalf("got %v, want ErrBroken", err)
	}
	l.Close()
	// Reopening recovers: the unsynced line is complete here, so it stays.
	l2 := open(t, mem, 0)
	defer l2.Close()
	if n := len(readJournal(t, mem)); n != 1 {
		t.Errorf("%d events after reopen, want 1", n)
	}
}

// reopenAfterCrash opens, at epoch, the journal a crash at at left: it
// must open and quarantine nothing unless the crash tore an append. It
// returns the journal's events.
func reopenAfterCrash(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint, epoch uint64) []journal.Event {
	t.Helper()
	l, err := Open(Config{FS: fsys, Path: jpath, Epoch: epoch})
	if err != nil {
		t.Fatalf("%v: reopen: %v", at, err)
	}
	defer l.Close()
	if q := l.Quarantined(); len(q) > 0 && !tornAt(at) {
		t.Errorf("%v: quarantined %+v after a crash that did not tear", at, q)
	}
	return readJournal(t, fsys)
}
