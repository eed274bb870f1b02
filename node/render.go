package node

import (
	"errors"
	"fmt"
	"github.com/agentcapsule/capsule/agent"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
)

// Notes of a prepare that rendered nothing (not failures: the agent's next
// step has nothing to send yet, or no model to send it to).
const (
	noteNoModel = "the journal names no model (no model_change event): nothing to render"
	noteEmpty   = "the journal holds no conversation yet (no user or assistant message): nothing to render"
)

// renderFunc renders a journal into a request body; tests replace it.
type renderFunc func([]journal.Event, render.Target) ([]byte, *render.Report, error)

// A target's prepare renders the journal for the agent's current model
// (docs/PROTOCOL.md §3, phase 4): it builds the request body the agent's
// next step would send, and fails the prepare if it cannot, so that a
// target that could not serve the agent never activates it. The body is
// thrown away; the report travels back to the source in the push reply.

// renderJournal renders events for the newest model_change among them
// with fn (nil: wire.Render). now measures the render. A journal without a
// model_change, or without a conversation yet, gives a report whose Note
// says so, and no error.
func renderJournal(events []journal.Event, fn renderFunc, now func() time.Time) (*api.RenderReport, error) {
	if fn == nil {
		fn = wire.Render
	}
	mc, ok, err := agent.CurrentModel(events)
	if err != nil {
		return nil, err
	}
	if !ok {
		return &api.RenderReport{Events: len(events), Note: noteNoModel}, nil
	}
	t := agent.TargetOf(mc)
	rr := &api.RenderReport{Model: &api.ModelRef{Provider: mc.Provider, API: mc.API, Model: mc.Model}, RenderAPI: string(t.API), Events: len(events)}
	start := now()
	body, rep, err := fn(events, t)
	rr.Micros = now().Sub(start).Microseconds()
	switch {
	case errors.Is(err, render.ErrEmpty):
		rr.Note = noteEmpty
		return rr, nil
	case err != nil:
		return nil, fmt.Errorf("render for %s %s: %w", mc.Provider, mc.Model, err)
	}
	rr.Bytes, rr.Tokens = len(body), rep.Tokens.Estimated
	return rr, nil
}

// warmed records the wire formats rendered once in this process.
var warmed sync.Map

// warmRender renders a one-message journal for the current model of
// events once per wire format and process: the first render pays for the
// tokenizer's tables, and a target that warms up during pre-copy keeps
// that cost out of the frozen window.
func warmRender(events []journal.Event, fn renderFunc) {
	mc, ok, err := agent.CurrentModel(events)
	if err != nil || !ok {
		return
	}
	t := agent.TargetOf(mc)
	if _, done := warmed.LoadOrStore(t.API, true); done {
		return
	}
	if fn == nil {
		fn = wire.Render
	}
	w := journal.NewWriter("warm-up")
	e, err := w.Next(journal.KindUser, 1, "", journal.UserMessage{Text: "warm up"})
	if err != nil {
		return
	}
	_, _, _ = fn([]journal.Event{e}, t)
}

// The render a prepare must do is the longest piece of work inside the
// frozen window (a full render of a long journal takes tens of
// milliseconds). A target therefore starts it as soon as the journal copy
// holds the journal the move will stage (renderAhead, when the tail
// arrives), and the prepare takes the finished or running render over
// when the journal it stages is exactly the one rendered: same number of
// events, same bytes, same digest. Otherwise it renders afresh. The
// render is pure (it reads the events, writes nothing), so a render ahead
// that nobody takes over is only wasted work.

// journalKey identifies the contents of a journal copy.
type journalKey struct {
	events int64
	bytes  int64
	digest string
}

func keyOfLog(l *agentlog.Log) journalKey {
	s := l.Summary()
	return journalKey{events: s.Events, bytes: s.Bytes, digest: string(s.Digest)}
}
