package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/node/ident"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// memData is an in-memory file system with the folder /data.
func memData(t *testing.T) *vfs.Mem {
	t.Helper()
	fsys := vfs.NewMem()
	if err := vfs.MkdirAllDurable(fsys, "/data", 0o700); err != nil {
		t.Fatal(err)
	}
	return fsys
}

// mustKey returns a node key made from fixed entropy b.
func mustKey(t *testing.T, b byte) *ident.Key {
	t.Helper()
	k, err := ident.NewKey(bytes.NewReader(bytes.Repeat([]byte{b}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestHolderRecordSignedAndFailsClosed(t *testing.T) {
	k, other := mustKey(t, 1), mustKey(t, 2)
	path := filepath.Join("/data", HolderFile)
	adopt := func(k *ident.Key, agent string, epoch uint64) Signed {
		tg := transfer.NewTarget(agent, string(k.ID()))
		rd := tg.Step(transfer.Input{Kind: transfer.InAdopt, Epoch: epoch})
		return Sign(k, rd.Records[0])
	}
	rec := adopt(k, "01AGENT", 3)
	fsys := memData(t)
	if err := Save(fsys, path, rec); err != nil {
		t.Fatal(err)
	}
	tg, err := LoadTarget(fsys, path, k.ID(), "01AGENT")
	if err != nil {
		t.Fatal(err)
	}
	if tg.Holder() != 3 || tg.MaxEpoch() != 3 {
		t.Errorf("loaded target holder=%d max=%d, want 3 and 3", tg.Holder(), tg.MaxEpoch())
	}

	tampered := adopt(k, "01AGENT", 3)
	tampered.Epoch, tampered.Record.Target.Holder = 4, 4
	forged := adopt(other, "01AGENT", 9)
	cases := []struct {
		name  string
		write *Signed
		agent string
		want  error
	}{
		{"missing", nil, "01AGENT", ErrNoHolder},
		{"tampered epoch", &tampered, "01AGENT", ErrHolderInvalid},
		{"another node's record", &forged, "01AGENT", ErrHolderInvalid},
		{"record for another agent", &rec, "01OTHER", ErrHolderInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := memData(t)
			if c.write != nil {
				if err := Save(fsys, path, *c.write); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadTarget(fsys, path, k.ID(), c.agent)
			if !errors.Is(err, c.want) {
				t.Fatalf("LoadTarget = %v, want %v", err, c.want)
			}
		})
	}
}

// TestRecordLogCrash cuts the power at every durable step of saving holder
// records, in every outcome of the unsynced changes: the first save
// replaces a legacy holder.json with a new log, the next ones append, and
// the last comes after a log that outgrew MaxLog and is rewritten.
// After the crash the newest record is the last acknowledged one or the
// one being saved, never an older one, never none; and the next save
// works, whatever the crash left (a torn last line, a leftover temporary
// file). docs/PROTOCOL.md §5.
func TestRecordLogCrash(t *testing.T) {
	k := mustKey(t, 1)
	dir := "/data"
	path, legacy := filepath.Join(dir, HolderFile), filepath.Join(dir, "holder.json")
	setup := func(t testing.TB, fsys vfs.FS) {
		if err := vfs.MkdirAllDurable(fsys, dir, 0o700); err != nil {
			t.Fatal(err)
		}
		old, _ := json.MarshalIndent(adoptRecord(k, "01AGENT", 1), "", "  ")
		if err := vfs.WriteFile(fsys, legacy, append(old, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const last = 5
	var acked uint64
	op := func(fsys vfs.FS) error {
		acked = 1
		for e := uint64(2); e <= last; e++ {
			if e == last { // a log that grew too large is rewritten
				if err := growLog(fsys, path); err != nil {
					return err
				}
			}
			if err := Save(fsys, path, adoptRecord(k, "01AGENT", e)); err != nil {
				return err
			}
			acked = e
		}
		return nil
	}
	vfstest.ForEachCrashPoint(t, setup, op, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		tg, err := LoadTarget(fsys, path, k.ID(), "01AGENT")
		if err != nil {
			t.Fatalf("%v: %v", at, err)
		}
		if got := tg.Holder(); got != acked && (at.Done() || got != acked+1) {
			t.Fatalf("%v: holder epoch %d after %d was acknowledged", at, got, acked)
		}
		if err := Save(fsys, path, adoptRecord(k, "01AGENT", last+1)); err != nil {
			t.Fatalf("%v: save after the crash: %v", at, err)
		}
		if got := holderAt(t, fsys, path, k); got != last+1 {
			t.Fatalf("%v: after a save of epoch %d the log reads %d", at, last+1, got)
		}
	})
}

// growLog appends copies of the newest record to the log at path, durably,
// until it is past MaxLog.
func growLog(fsys vfs.FS, path string) error {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return err
	}
	lastLine := b[bytes.LastIndexByte(b[:len(b)-1], '\n')+1:]
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat(lastLine, MaxLog/len(lastLine)+1)); err != nil {
		return err
	}
	return f.Sync()
}
