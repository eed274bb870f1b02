package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
)

const jpath = "/cap/memory/timeline_events.jsonl"

func user(text string) journal.UserMessage { return journal.UserMessage{Text: text} }

func open(t *testing.T, fsys vfs.FS, epoch uint64) *Log {
	t.Helper()
	l, err := Open(Config{FS: fsys, Path: jpath, Epoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func readJournal(t *testing.T, fsys vfs.FS) []journal.Event {
	t.Helper()
	data, err := vfs.ReadFile(fsys, jpath)
	if err != nil {
		t.Fatal(err)
	}
	events, probs, err := journal.Check(bytes.NewReader(data))
	if err != nil || len(probs) > 0 {
		t.Fatalf("journal does not verify: %v %v", probs, err)
	}
	return events
}

func TestAppendIsDurable(t *testing.T) {
	mem := vfs.NewMem()
	l := open(t, mem, 1)
	want, err := l.Append("m1", journal.KindUser, 1, "2026-01-01T00:00:00Z", user("hello"))
	if err != nil {
		t.Fatal(err)
	}
	mem.Crash() // only what was synced survives
	got := readJournal(t, mem)
	if diff := cmp.Diff([]journal.Event{want}, got); diff != "" {
		t.Errorf("after crash (-want +got):\n%s", diff)
	}
}

func TestConcurrentAppendsVerify(t *testing.T) {
	mem := vfs.NewMem()
	l := open(t, mem, 3)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if _, err := l.Append(fmt.Sprintf("m%d", g%3), journal.KindUser, 3, "", user(fmt.Sprint(g, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	events := readJournal(t, mem)
	if len(events) != 320 {
		t.Fatalf("got %d events, want 320", len(events))
	}
	if got, want := l.Summary(), journal.Summarize(events); !got.Equal(want) {
		t.Errorf("Summary = %+v, want %+v", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := open(t, mem, 0)
	if got := l2.Summary(); !got.Equal(journal.Summarize(events)) {
		t.Errorf("reopened Summary = %+v", got)
	}
	if got := l2.Epoch(); got != 3 {
		t.Errorf("reopened fence = %d, want 3 (the highest epoch written)", got)
	}
}

func TestStaleEpochRefused(t *testing.T) {
	mem := vfs.NewMem()
	l := open(t, mem, 5)
	_, err := l.Append("m1", journal.KindUser, 4, "", user("late"))
	var se *journal.StaleEpochError
	if !errors.Is(err, journal.ErrStaleEpoch) || !errors.As(err, &se) || se.Epoch != 4 || se.Holder != 5 {
		t.Fatalf("got %v, want a StaleEpochError{4, 5}", err)
	}
	if _, err := l.Append("m1", journal.KindUser, 6, "", user("new holder")); err != nil {
		t.Fatal(err)
	}
	// The journal now holds epoch 6: the fence rose with it.
	if _, err := l.Append("m2", journal.KindUser, 5, "", user("old holder")); !errors.Is(err, journal.ErrStaleEpoch) {
		t.Fatalf("append under 5 after 6: got %v, want ErrStaleEpoch", err)
	}
	if n := len(readJournal(t, mem)); n != 1 {
		t.Errorf("journal has %d events, want 1", n)
	}
}

func TestTornLastLineQuarantined(t *testing.T) {
	for _, tc := range []struct {
		name, tail, reason string
	}{
		{"no newline", `{"body":{"text":"x"},"clo`, "incomplete last line"},
		{"zeros", "\x00\x00\x00\x00", "incomplete last line"},
		{"garbage with newline", "{not json\n", "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "timeline_events.jsonl")
			l, err := Open(Config{Path: p})
			if err != nil {
				t.Fatal(err)
			}
			e, err := l.Append("m1", journal.KindUser, 0, "", user("kept"))
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			good, _ := os.ReadFile(p)
			f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(tc.tail)
			f.Close()

			l, err = Open(Config{Path: p})
			if err != nil {
				t.Fatal(err)
			}
			q := l.Quarantined()
			if len(q) != 1 || q[0].Path != p+".quarantine-1" || q[0].Line != 2 || q[0].Bytes != int64(len(tc.tail)) || !bytes.Contains([]byte(q[0].Reason), []byte(tc.reason)) {
				t.Fatalf("Quarantined = %+v", q)
			}
			if moved, _ := os.ReadFile(q[0].Path); string(moved) != tc.tail {
				t.Errorf("quarantine file holds %q, want %q", moved, tc.tail)
			}
			if now, _ := os.ReadFile(p); !bytes.Equal(now, good) {
				t.Errorf("journal after recovery = %q, want %q", now, good)
			}
			e2, err := l.Append("m1", journal.KindUser, 0, "", user("next"))
			if err != nil || e2.Prev != e.ID {
				t.Fatalf("append after recovery: %v, prev %s want %s", err, e2.Prev, e.ID)
			}
		})
	}
}

func TestCorruptMiddleRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "j.jsonl")
	l, _ := Open(Config{Path: p})
	for i := 0; i < 3; i++ {
		if _, err := l.Append("m1", journal.KindUser, 0, "", user(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	data, _ := os.ReadFile(p)
	bad := bytes.Replace(data, []byte(`"text":"1"`), []byte(`"text":"X"`), 1)
	os.WriteFile(p, bad, 0o644)
	_, err := Open(Config{Path: p})
	var ve *journal.VerifyError
	if !errors.As(err, &ve) || ve.Problems[0].Line != 2 || ve.Problems[0].Code != journal.CodeID {
		t.Fatalf("got %v, want a VerifyError at line 2", err)
	}
	if now, _ := os.ReadFile(p); !bytes.Equal(now, bad) {
		t.Error("a refused open changed the file")
	}
}

// TestOpenRefusesWhatACrashCannotLeave (FORMAT §7.8): only the last line,
// and only beyond the manifest's committed bytes, is a torn append that Open
// may quarantine. A bad line before a torn last line, or a bad last line the
// manifest committed, fails the open with the first problem and changes
// nothing: no quarantine file, no byte of the journal.
func TestOpenRefusesWhatACrashCannotLeave(t *testing.T) {
	for _, tc := range []struct {
		name      string
		damage    func(good []byte) []byte
		committed bool // the manifest commits the whole damaged file
		line      int  // line of the first problem
		msg       string
	}{
		{"bad middle line and torn last line", func(good []byte) []byte {
			b := bytes.Replace(good, []byte(`"text":"1"`), []byte(`"text":"X"`), 1)
			return append(b, `{"body":{"te`...)
		}, false, 2, ""},
		{"bad last line inside the committed bytes", func(good []byte) []byte {
			return bytes.Replace(good, []byte(`"text":"2"`), []byte(`"text":"X"`), 1)
		}, true, 3, "the committed journal is damaged"},
		{"unparsable last line inside the committed bytes", func(good []byte) []byte {
			return append(good, "{not json\n"...)
		}, true, 4, "the committed journal is damaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "timeline_events.jsonl")
			l, err := Open(Config{Path: p})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				if _, err := l.Append("m1", journal.KindUser, 0, "", user(fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
			}
			l.Close()
			good, _ := os.ReadFile(p)
			bad := tc.damage(bytes.Clone(good))
			if err := os.WriteFile(p, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			committed := int64(0)
			if tc.committed {
				committed = int64(len(bad))
			}
			_, err = Open(Config{Path: p, Committed: committed})
			var ve *journal.VerifyError
			if !errors.As(err, &ve) || errors.Is(err, ErrShort) || ve.Problems[0].Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want a VerifyError at line %d with %q", err, tc.line, tc.msg)
			}
			if now, _ := os.ReadFile(p); !bytes.Equal(now, bad) {
				t.Errorf("a refused open changed the journal:\n got %q\nwant %q", now, bad)
			}
			if q, _ := filepath.Glob(p + QuarantineSuffix + "*"); len(q) > 0 {
				t.Errorf("a refused open wrote quarantine files %v", q)
			}
		})
	}
}

// sealedElsewhere returns n user events sealed by another machine ("src"),
// epoch 1, chained from its first: a tail for Import.
func sealedElsewhere(t *testing.T, n int) []journal.Event {
	t.Helper()
	src := journal.NewWriter("src")
	var tail []journal.Event
	for i := range n {
		e, err := src.Next(journal.KindUser, 1, "", user(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		tail = append(tail, e)
	}
	return tail
}

func TestImport(t *testing.T) {
	tail := sealedElsewhere(t, 3)
	mem := vfs.NewMem()
	l := open(t, mem, 2)
	if n, err := l.Import(tail[:2]); err != nil || n != 2 {
		t.Fatalf("Import = %d, %v", n, err)
	}
	if n, err := l.Import(tail); err != nil || n != 1 {
		t.Fatalf("Import again = %d, %v; want 1 new", n, err)
	}
	if diff := cmp.Diff(tail, readJournal(t, mem)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	fork := journal.NewWriter("src")
	f1, _ := fork.Next(journal.KindUser, 1, "", user("other"))
	if _, err := l.Import([]journal.Event{f1}); !errors.Is(err, journal.ErrFork) {
		t.Errorf("Import of a fork: got %v, want ErrFork", err)
	}
	e, err := l.Append("dst", journal.KindUser, 2, "", user("after"))
	if err != nil || e.Clock != 4 {
		t.Errorf("append after import: clock %d, %v; want clock 4", e.Clock, err)
	}
}

func TestOpenRefusesShortJournal(t *testing.T) {
	mem := vfs.NewMem()
	l := open(t, mem, 0)
	if _, err := l.Append("m1", journal.KindUser, 0, "", user("x")); err != nil {
		t.Fatal(err)
	}
	committed := l.Summary().Bytes
	l.Close()
	if _, err := Open(Config{FS: mem, Path: jpath, Committed: committed + 1}); !errors.Is(err, ErrShort) {
		t.Fatalf("got %v, want ErrShort", err)
	}
}

// TestOneWriterAtATime opens a journal on disk twice: the second open is
// refused while the first is open (another process would be refused the
// same way: the lock is flock's), and succeeds once it is closed. Nothing
// the first writer appended is touched.
func TestOneWriterAtATime(t *testing.T) {
	p := filepath.Join(t.TempDir(), "timeline_events.jsonl")
	first, err := Open(Config{Path: p, Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Append("m1", journal.KindUser, 1, "2026-01-01T00:00:00Z", user("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Path: p, Epoch: 1}); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second writer: err = %v, want vfs.ErrLocked", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := Open(Config{Path: p, Epoch: 1})
	if err != nil {
		t.Fatalf("after the first writer closed: %v", err)
	}
	defer second.Close()
	if got := second.Summary().Events; got != 1 {
		t.Errorf("the journal holds %d events, want the 1 the first writer appended", got)
	}
}

// TestImportChecksChain (FORMAT §3): Import chain-checks events sealed
// elsewhere against the journal's heads before writing any of them: a gap
// in a machine's chain, a prev that names another event, and an id that
// does not match the content are each refused, and the file is unchanged.
func TestImportChecksChain(t *testing.T) {
	tail := sealedElsewhere(t, 3)
	wrongPrev := tail[1]
	wrongPrev.Prev = tail[2].ID
	if err := journal.Seal(&wrongPrev); err != nil {
		t.Fatal(err)
	}
	badID := tail[1]
	badID.Body = []byte(`{"text":"forged"}`)
	tests := []struct {
		name   string
		events []journal.Event
	}{
		{"gap", tail[2:]},
		{"prev names another event", []journal.Event{wrongPrev}},
		{"id does not match the content", []journal.Event{badID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			l := open(t, mem, 2)
			defer l.Close()
			if _, err := l.Import(tail[:1]); err != nil {
				t.Fatal(err)
			}
			before, _ := vfs.ReadFile(mem, jpath)
			n, err := l.Import(tc.events)
			if err == nil || n != 0 {
				t.Fatalf("Import = %d, %v; want a refusal", n, err)
			}
			after, _ := vfs.ReadFile(mem, jpath)
			if diff := cmp.Diff(string(before), string(after)); diff != "" {
				t.Errorf("the refused import changed the file (-before +after):\n%s", diff)
			}
			if got := l.Summary().Events; got != 1 {
				t.Errorf("the journal holds %d events, want 1", got)
			}
		})
	}
}

// AppendAll of one event returns it, as it returns every event of a
// longer unit: callers (the node's watch hook) show what it returns.
func TestAppendAllOfOneReturnsIt(t *testing.T) {
	mem := vfs.NewMem()
	l := open(t, mem, 1)
	got, err := l.AppendAll("m1", 1, "2026-01-01T00:00:00Z", []journal.Kind{journal.KindUser}, []any{user("hello")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(readJournal(t, mem), got); diff != "" {
		t.Errorf("AppendAll returned (-journal +returned):\n%s", diff)
	}
}
