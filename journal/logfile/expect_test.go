package logfile

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/vfs"
)

// committedLog writes n events, returns the summary of them (what a
// manifest records), then appends a tail of two uncommitted events.
func committedLog(t *testing.T, fsys vfs.FS, n int) journal.Summary {
	t.Helper()
	l := open(t, fsys, 1)
	for i := 0; i < n; i++ {
		if _, err := l.Append("m1", journal.KindUser, 1, "", user(strings.Repeat("x", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	sum := l.Summary()
	for i := 0; i < 2; i++ {
		if _, err := l.Append("m2", journal.KindUser, 1, "", user("tail")); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestOpenChecksExpect: Open with the manifest's record checks the
// committed prefix in its one pass, visits every event, and refuses a
// record the prefix does not match (digest, heads, length).
func TestOpenChecksExpect(t *testing.T) {
	mem := vfs.NewMem()
	sum := committedLog(t, mem, 5)
	lines := 0
	l, err := Open(Config{FS: mem, Path: jpath, Epoch: 1, Expect: &sum, Visit: func(*journal.Event, int) { lines++ }})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Summary(); got.Events != 7 || lines != 7 {
		t.Errorf("opened with %d events, visited %d, want 7 and 7", got.Events, lines)
	}
	l.Close()

	wrongDigest := sum
	wrongDigest.Digest = digest.FromBytes([]byte("something else"))
	wrongHeads := sum
	wrongHeads.Heads = map[string]journal.Head{"m1": {Seq: 4, ID: sum.Heads["m1"].ID, Clock: 4, Epoch: 1}}
	tooLong := sum
	tooLong.Bytes += 1 << 20
	for name, rec := range map[string]journal.Summary{"digest": wrongDigest, "heads": wrongHeads} {
		if _, err := Open(Config{FS: mem, Path: jpath, Epoch: 1, Expect: &rec}); !errors.Is(err, ErrCommitted) {
			t.Errorf("%s: Open = %v, want ErrCommitted", name, err)
		}
	}
	if _, err := Open(Config{FS: mem, Path: jpath, Epoch: 1, Expect: &tooLong}); !errors.Is(err, ErrShort) {
		t.Errorf("record longer than the file: Open = %v, want ErrShort", err)
	}
}

// TestEachReadsWholeLines streams a journal with a torn last line: the
// events before it, the length of the whole lines, and nothing for a
// missing file.
func TestEachReadsWholeLines(t *testing.T) {
	mem := vfs.NewMem()
	committedLog(t, mem, 3)
	data, err := vfs.ReadFile(mem, jpath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mem.OpenFile(jpath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(`{"body":{"te`))
	f.Close()
	var got []string
	n, err := Each(mem, jpath, func(e *journal.Event, _ journal.Pos) error {
		got = append(got, e.ID)
		return nil
	})
	want, derr := journal.Decode(bytes.NewReader(data))
	if err != nil || derr != nil || n != int64(len(data)) || len(got) != len(want) || got[4] != want[4].ID {
		t.Fatalf("Each = %d events, %d bytes, %v; want %d events, %d bytes", len(got), n, err, len(want), len(data))
	}
	if n, err := Each(mem, "/nowhere.jsonl", nil); n != 0 || err != nil {
		t.Errorf("Each of a missing journal = %d, %v", n, err)
	}
}
