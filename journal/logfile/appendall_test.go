package logfile

import (
	"bytes"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/vfs"
)

// AppendAll's events are one unit: with other appenders racing it, no
// other event lands between them, and they chain and count on.
func TestAppendAllIsOneUnit(t *testing.T) {
	mem := vfs.NewMem()
	l := open(t, mem, 1)
	kinds := []journal.Kind{journal.KindReasoning, journal.KindAssistant, journal.KindToolCall, journal.KindToolCall, journal.KindUsage}
	p := journal.Producer{Provider: "openai", API: "chat", Model: "m"}
	bodies := []any{
		journal.Reasoning{Producer: p, Step: "s", Text: "think"},
		journal.AssistantMessage{Producer: p, Step: "s", Text: "calling"},
		journal.ToolCall{CallID: "c1", Name: "t", Producer: p, Step: "s"},
		journal.ToolCall{CallID: "c2", Name: "t", Producer: p, Step: "s"},
		journal.Usage{Producer: p, InputTokens: 1, OutputTokens: 2},
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := l.Append("m1", journal.KindUser, 1, "", journal.UserMessage{Text: "x"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var got []journal.Event
	for i := 0; i < 20; i++ {
		evs, err := l.AppendAll("m1", 1, "", kinds, bodies)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != len(kinds) {
			t.Fatalf("AppendAll returned %d events", len(evs))
		}
		got = append(got, evs...)
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := vfs.ReadFile(mem, jpath)
	if err != nil {
		t.Fatal(err)
	}
	events, err := journal.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, e := range events {
		pos[e.ID] = i
	}
	for u := 0; u < len(got); u += len(kinds) {
		first := pos[got[u].ID]
		for k := 1; k < len(kinds); k++ {
			if pos[got[u+k].ID] != first+k {
				t.Fatalf("unit %d: event %d is at line %d, want %d: another event came between", u/len(kinds), k, pos[got[u+k].ID], first+k)
			}
		}
	}
	if len(events) != 200+len(got) {
		t.Fatalf("%d events in the file, want %d", len(events), 200+len(got))
	}
}

// A stale epoch refuses the whole unit, and an empty one is refused.
func TestAppendAllRefusals(t *testing.T) {
	l := open(t, vfs.NewMem(), 3)
	if _, err := l.AppendAll("m1", 2, "", []journal.Kind{journal.KindUser}, []any{journal.UserMessage{Text: "x"}}); err == nil {
		t.Fatal("an append under a stale epoch was taken")
	}
	if _, err := l.AppendAll("m1", 3, "", nil, nil); err == nil {
		t.Fatal("an empty unit was taken")
	}
	if n := l.Summary().Events; n != 0 {
		t.Fatalf("%d events written", n)
	}
}
