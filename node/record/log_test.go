package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/node/ident"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// adoptRecord returns k's signed record of a Target adopting agent at epoch.
func adoptRecord(k *ident.Key, agent string, epoch uint64) Signed {
	tg := transfer.NewTarget(agent, string(k.ID()))
	rd := tg.Step(transfer.Input{Kind: transfer.InAdopt, Epoch: epoch})
	return Sign(k, rd.Records[0])
}

func holderAt(t *testing.T, fsys vfs.FS, path string, k *ident.Key) uint64 {
	t.Helper()
	tg, err := LoadTarget(fsys, path, k.ID(), "01AGENT")
	if err != nil {
		t.Fatal(err)
	}
	return tg.Holder()
}

func lines(t *testing.T, fsys vfs.FS, path string) int {
	t.Helper()
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// TestRecordLogAppendsAndCompacts: records are appended, the newest is
// read back, and a log that outgrows MaxLog is rewritten with its
// newest record alone.
func TestRecordLogAppendsAndCompacts(t *testing.T) {
	k := mustKey(t, 1)
	fsys := memData(t)
	path := filepath.Join("/data", HolderFile)
	maxLines, prev := 0, 0
	for e := uint64(1); e <= 200; e++ {
		if err := Save(fsys, path, adoptRecord(k, "01AGENT", e)); err != nil {
			t.Fatal(err)
		}
		if got := holderAt(t, fsys, path, k); got != e {
			t.Fatalf("after saving epoch %d the log reads %d", e, got)
		}
		n := lines(t, fsys, path)
		if n != prev+1 && n != 1 {
			t.Fatalf("epoch %d: %d records after %d, want one more or a log rewritten with one", e, n, prev)
		}
		maxLines, prev = max(maxLines, n), n
		if fi, _ := fsys.Stat(path); fi.Size() > MaxLog {
			t.Fatalf("epoch %d: log of %d bytes, limit %d", e, fi.Size(), MaxLog)
		}
	}
	if maxLines < 10 {
		t.Fatalf("the log never held more than %d records: nothing was appended", maxLines)
	}
}

// TestRecordLogTornTail: a last line a crash cut short is not a record;
// the next save rewrites the log rather than append after it.
func TestRecordLogTornTail(t *testing.T) {
	k := mustKey(t, 1)
	fsys := memData(t)
	path := filepath.Join("/data", HolderFile)
	for e := uint64(1); e <= 2; e++ {
		if err := Save(fsys, path, adoptRecord(k, "01AGENT", e)); err != nil {
			t.Fatal(err)
		}
	}
	next, _ := json.Marshal(adoptRecord(k, "01AGENT", 3))
	for _, torn := range [][]byte{next[:len(next)/2], make([]byte, 300)} {
		b, _ := vfs.ReadFile(fsys, path)
		if err := vfs.WriteFile(fsys, path, append(b, torn...), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := holderAt(t, fsys, path, k); got != 2 {
			t.Fatalf("log with a torn tail reads epoch %d, want 2", got)
		}
	}
	if err := Save(fsys, path, adoptRecord(k, "01AGENT", 4)); err != nil {
		t.Fatal(err)
	}
	if got, n := holderAt(t, fsys, path, k), lines(t, fsys, path); got != 4 || n != 1 {
		t.Fatalf("after a torn tail: epoch %d in %d lines, want 4 in 1", got, n)
	}
	if err := vfs.WriteFile(fsys, path, next[:20], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTarget(fsys, path, k.ID(), "01AGENT"); !errors.Is(err, ErrHolderInvalid) {
		t.Fatalf("log with no whole record: %v, want ErrHolderInvalid", err)
	}
}

// TestRecordLogFailedAppendIsUndone: an append whose write or sync fails
// is cut off again, so the record the Target rolled back is not read back.
func TestRecordLogFailedAppendIsUndone(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync} {
		t.Run(string(op), func(t *testing.T) {
			k := mustKey(t, 1)
			ffs := vfs.NewFaulty(memData(t))
			path := filepath.Join("/data", HolderFile)
			if err := Save(ffs, path, adoptRecord(k, "01AGENT", 1)); err != nil {
				t.Fatal(err)
			}
			r := ffs.Fail(op, HolderFile, vfs.ErrIO)
			if err := Save(ffs, path, adoptRecord(k, "01AGENT", 2)); !errors.Is(err, vfs.ErrIO) {
				t.Fatalf("save with a failing %s: %v", op, err)
			}
			if r.Hits() == 0 {
				t.Fatal("the fault was never reached")
			}
			ffs.Clear()
			if got := holderAt(t, ffs, path, k); got != 1 {
				t.Fatalf("after a failed append the log reads epoch %d, want 1", got)
			}
			if err := Save(ffs, path, adoptRecord(k, "01AGENT", 3)); err != nil {
				t.Fatal(err)
			}
			if got := holderAt(t, ffs, path, k); got != 3 {
				t.Fatalf("epoch %d, want 3", got)
			}
		})
	}
}

// TestRecordLogReadsLegacyFile: a data folder of an earlier release has
// holder.json (one indented record); it is read while no log exists, and
// removed once the log holds a newer record.
func TestRecordLogReadsLegacyFile(t *testing.T) {
	k := mustKey(t, 1)
	fsys := memData(t)
	path := filepath.Join("/data", HolderFile)
	legacy := filepath.Join("/data", "holder.json")
	old, _ := json.MarshalIndent(adoptRecord(k, "01AGENT", 5), "", "  ")
	if err := vfs.WriteFile(fsys, legacy, append(old, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := holderAt(t, fsys, path, k); got != 5 {
		t.Fatalf("legacy holder.json reads epoch %d, want 5", got)
	}
	if err := Save(fsys, path, adoptRecord(k, "01AGENT", 6)); err != nil {
		t.Fatal(err)
	}
	if got := holderAt(t, fsys, path, k); got != 6 {
		t.Fatalf("epoch %d, want 6", got)
	}
	if _, err := fsys.Stat(legacy); err == nil {
		t.Fatal("holder.json is still there beside the log")
	}
}
