package main

import (
	"bytes"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// The chat shows the assistant's text as its deltas arrive and, when the
// assistant event of that step is journaled, only ends the line; text
// that did not stream is shown from the event; this chat's own messages
// are not shown again, another client's are.
func TestChatShowsDeltasOnce(t *testing.T) {
	var out bytes.Buffer
	c := &chat{out: &out, mine: map[string]bool{}, streamed: map[string]bool{}}
	w := journal.NewWriter("m1")
	event := func(kind journal.Kind, body any) api.WatchMessage {
		e, err := w.Next(kind, 1, "2026-01-01T00:00:00Z", body)
		if err != nil {
			t.Fatal(err)
		}
		w.Observe(&e)
		return api.WatchMessage{Event: journal.Encode(e)}
	}
	mine := event(journal.KindUser, journal.UserMessage{Text: "from me"})
	e, _ := mine.JournalEvent()
	c.mine[e.ID] = true
	p := journal.Producer{Provider: "ollama", API: "chat", Model: "m"}
	for _, m := range []api.WatchMessage{
		mine,
		{Delta: &api.WatchDelta{Step: "s1", Text: "Hel"}},
		{Delta: &api.WatchDelta{Step: "s1", Text: "lo"}},
		event(journal.KindAssistant, journal.AssistantMessage{Text: "Hello", Step: "s1", Producer: p}),
		event(journal.KindToolCall, journal.ToolCall{CallID: "c1", Name: "read_file", Producer: p, Step: "s1"}),
		event(journal.KindAssistant, journal.AssistantMessage{Text: "Done.", Step: "s2", Producer: p}),
		event(journal.KindUser, journal.UserMessage{Text: "from elsewhere"}),
		{State: &api.WatchState{State: api.WatchIdle}},
	} {
		c.show(m)
	}
	want := "assistant: Hello\n[tool_call] c1 read_file()\nassistant: Done.\nuser: from elsewhere\n[idle]\n"
	if got := out.String(); got != want {
		t.Errorf("chat showed\n%s\nwant\n%s", got, want)
	}
}
