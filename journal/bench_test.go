package journal

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// benchJournal is n events of 4 machines with bodies of about 150 bytes.
func benchJournal(b *testing.B, n int) ([]Event, []byte) {
	b.Helper()
	ws := make([]*Writer, 4)
	for i := range ws {
		ws[i] = NewWriter(fmt.Sprintf("m%026d", i))
	}
	events := make([]Event, 0, n)
	var clock uint64
	for i := 0; i < n; i++ {
		w := ws[i%4]
		w.clock = max(w.clock, clock)
		e, err := w.Next(KindUser, 1, "2026-01-01T00:00:00Z", UserMessage{Text: fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 10))})
		if err != nil {
			b.Fatal(err)
		}
		clock = e.Clock
		events = append(events, e)
	}
	return events, join(linesOf(events))
}

// BenchmarkCheck measures reading and verifying a journal (the path of
// capsule log verify), in bytes per second.
func BenchmarkCheck(b *testing.B) {
	_, data := benchJournal(b, 100000)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, probs, err := Check(bytes.NewReader(data))
		if err != nil || len(probs) > 0 {
			b.Fatal(err, probs)
		}
	}
}

// BenchmarkParseLine measures one line's parse, canonical check and hash.
func BenchmarkParseLine(b *testing.B) {
	events, _ := benchJournal(b, 1)
	line := Encode(events[0])
	b.SetBytes(int64(len(line)))
	for i := 0; i < b.N; i++ {
		if _, err := parseOwned(line, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMerge merges two 100,000-event journals sharing 50,000 events.
func BenchmarkMerge(b *testing.B) {
	shared, _ := benchJournal(b, 50000)
	a := forkOf(b, shared, "fork-a", 50000)
	c := forkOf(b, shared, "fork-b", 50000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Merge(a, c); err != nil {
			b.Fatal(err)
		}
	}
}

func forkOf(b *testing.B, shared []Event, machine string, k int) []Event {
	w := NewWriter(machine, shared...)
	out := append([]Event(nil), shared...)
	for i := 0; i < k; i++ {
		e, err := w.Next(KindUser, 1, "", UserMessage{Text: fmt.Sprint(i)})
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// BenchmarkScan measures Scan, the bounded-memory verification of capsule
// log verify, in bytes per second.
func BenchmarkScan(b *testing.B) {
	_, data := benchJournal(b, 100000)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		probs, err := Scan(bytes.NewReader(data), nil)
		if err != nil || len(probs) > 0 {
			b.Fatal(err, probs)
		}
	}
}
