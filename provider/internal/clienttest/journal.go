package clienttest

import (
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// testJournal is one machine's journal, built in memory.
type testJournal struct {
	t      *testing.T
	w      *journal.Writer
	events []journal.Event
}

func newJournal(t *testing.T) *testJournal {
	return &testJournal{t: t, w: journal.NewWriter("test-machine")}
}

// add seals and appends one event.
func (j *testJournal) add(kind journal.Kind, body any) {
	j.t.Helper()
	e, err := j.w.Next(kind, 0, "", body)
	if err != nil {
		j.t.Fatalf("journal %s: %v", kind, err)
	}
	j.events = append(j.events, e)
}

// record journals a response's outputs, calls under their journal names
// and IDs, and returns the text and the calls.
func (j *testJournal) record(resp *provider.Response, rep *render.Report) (string, []journal.ToolCall) {
	j.t.Helper()
	var text strings.Builder
	var calls []journal.ToolCall
	for _, o := range resp.Events {
		body := o.Body
		switch b := body.(type) {
		case journal.AssistantMessage:
			text.WriteString(b.Text)
		case journal.ToolCall:
			b.CallID, b.Name = rep.JournalCallID(b.CallID), rep.JournalToolName(b.Name)
			calls = append(calls, b)
			body = b
		}
		j.add(o.Kind, body)
	}
	return text.String(), calls
}
