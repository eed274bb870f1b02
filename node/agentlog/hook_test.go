package agentlog

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/vfs"
)

// The append hook sees every event the log writes, once, after it is
// durable: Append, AppendAll and the new events of an Import (events the
// journal already held are not seen again).
func TestOnAppendSeesEveryWrittenEvent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.jsonl")
	l, err := Open(vfs.OS{}, path, "m1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var seen []journal.Event
	l.SetOnAppend(func(e journal.Event) {
		events, _, err := Read(vfs.OS{}, path)
		found := false
		for _, f := range events {
			found = found || f.ID == e.ID
		}
		if err != nil || !found {
			t.Errorf("hook saw %s before it was in the file (%d events, %v)", e.ID, len(events), err)
		}
		seen = append(seen, e)
	})
	if _, err := l.Append(journal.KindUser, 1, wall, journal.UserMessage{Text: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAll(1, wall, []journal.Kind{journal.KindFrozen, journal.KindResumed}, []any{journal.Frozen{Reason: "x"}, journal.Resumed{}}); err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriterAfter("m2", l.Summary())
	e1, err := w.Next(journal.KindUser, 1, wall, journal.UserMessage{Text: "from m2"})
	if err != nil {
		t.Fatal(err)
	}
	w.Observe(&e1)
	if _, err := l.Import([]journal.Event{e1}); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Import([]journal.Event{e1}); err != nil || n != 0 {
		t.Fatalf("re-import = %d, %v", n, err)
	}
	got := []journal.Kind{}
	for _, e := range seen {
		got = append(got, e.Kind)
	}
	want := []journal.Kind{journal.KindUser, journal.KindFrozen, journal.KindResumed, journal.KindUser}
	if len(got) != len(want) {
		t.Fatalf("hook saw %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("hook saw %v, want %v", got, want)
		}
	}
	if seen[3].Machine != "m2" {
		t.Errorf("imported event from %s, want m2", seen[3].Machine)
	}
}

// Concurrent appenders: the hook sees the events in the file's order, so
// a watcher that counts what it saw can resume from the count.
func TestOnAppendInFileOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	l, err := Open(vfs.OS{}, path, "m1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var seen []string
	l.SetOnAppend(func(e journal.Event) { seen = append(seen, e.ID) }) // serialized by the log
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				if _, err := l.Append(journal.KindUser, 1, wall, journal.UserMessage{Text: fmt.Sprint(g, i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	events, _, err := Read(vfs.OS{}, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != len(seen) {
		t.Fatalf("hook saw %d events, the file has %d", len(seen), len(events))
	}
	for i, e := range events {
		if seen[i] != e.ID {
			t.Fatalf("hook event %d is %s, the file's is %s", i, seen[i], e.ID)
		}
	}
}
