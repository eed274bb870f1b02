package clienttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
)

// FastRetry retries without waiting long, for tests.
var FastRetry = provider.Retry{Attempts: 4, Base: time.Millisecond, Max: 2 * time.Millisecond, MaxRetryAfter: time.Second}

// FirstRequest is the opening request of a loop for api, rendered, to be
// sent to base.
func FirstRequest(t *testing.T, api render.API, base string) *provider.Request {
	t.Helper()
	j := newJournal(t)
	target := render.Target{API: api, Model: sim.Planner, Tools: Tools}
	j.add(journal.KindUser, journal.UserMessage{Text: Ask})
	body, _, err := wire.Render(j.events, target)
	if err != nil {
		t.Fatal(err)
	}
	return &provider.Request{API: api, Model: sim.Planner, Producer: target.Producer(), Step: "step-1", Body: body, BaseURL: base}
}

// WantRefused checks that err is the simulator's refusal of the newest
// request it logged: ErrRefused, status 400, its message, one attempt.
func WantRefused(t *testing.T, err error, s *sim.Server, f *Front) {
	t.Helper()
	var pe *provider.Error
	if !errors.As(err, &pe) || !errors.Is(err, provider.ErrRefused) || pe.Status != 400 {
		t.Fatalf("err = %v, want a 400 refusal", err)
	}
	log := s.Requests()
	if len(log) != 1 || len(log[0].Violations) == 0 {
		t.Fatalf("simulator log %+v, want one refused request", log)
	}
	if want := log[0].Violations[0].Message; pe.Message != want {
		t.Errorf("message = %q, want the provider's %q", pe.Message, want)
	}
	if pe.Attempts != 1 || f.Hits() != 1 {
		t.Errorf("attempts %d, hits %d: a refusal is not retried", pe.Attempts, f.Hits())
	}
}

// WantCancel calls c with a request the server holds (started is
// signalled when it has it), cancels, and checks the call returns the
// context's error.
func WantCancel(t *testing.T, c provider.Client, req *provider.Request, started <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, req)
		done <- err
	}()
	<-started
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// Next journals a user request, the response and an "ok" result for each
// of its calls, and returns the next request rendered for target, after
// checking it against the simulator's rules for that API.
func Next(t *testing.T, target render.Target, resp *provider.Response) []byte {
	t.Helper()
	j := newJournal(t)
	j.add(journal.KindUser, journal.UserMessage{Text: Ask})
	_, calls := j.record(resp, &render.Report{})
	for _, c := range calls {
		j.add(journal.KindToolResult, journal.ToolResult{CallID: c.CallID, Name: c.Name, Content: "ok"})
	}
	body, _, err := wire.Render(j.events, target)
	if err != nil {
		t.Fatal(err)
	}
	if vs := sim.Check(target, body); len(vs) > 0 {
		t.Fatalf("the next request breaks the rules: %v\n%s", vs, body)
	}
	return body
}
