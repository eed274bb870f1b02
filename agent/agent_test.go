package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// book is an in-memory journal for tests: events appended through Env.Append.
type book struct {
	t      *testing.T
	w      *journal.Writer
	events []journal.Event
}

func newBook(t *testing.T) *book { return &book{t: t, w: journal.NewWriter("m1")} }

func (b *book) add(kind journal.Kind, body any) {
	b.t.Helper()
	if err := b.append([]journal.Kind{kind}, []any{body}); err != nil {
		b.t.Fatal(err)
	}
}

func (b *book) append(kinds []journal.Kind, bodies []any) error {
	for i := range kinds {
		ev, err := b.w.Next(kinds[i], 1, "", bodies[i])
		if err != nil {
			return err
		}
		b.w.Observe(&ev)
		b.events = append(b.events, ev)
	}
	return nil
}

func (b *book) kinds() []journal.Kind {
	var out []journal.Kind
	for _, e := range b.events {
		out = append(out, e.Kind)
	}
	return out
}

var sim = journal.ModelChange{Provider: "openai", API: "chat", Model: "capsule-sim/planner"}

// script is a provider.Client that answers from a list of generations and
// records the requests it got.
type script struct {
	answers []provider.Response
	errs    []error
	got     []*provider.Request
	block   chan struct{} // when set, Call waits for ctx
}

func (s *script) Call(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	s.got = append(s.got, req)
	if s.block != nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	i := len(s.got) - 1
	if i < len(s.errs) && s.errs[i] != nil {
		return nil, s.errs[i]
	}
	r := s.answers[i]
	for j, o := range r.Events {
		switch b := o.Body.(type) {
		case journal.AssistantMessage:
			b.Producer, b.Step = req.Producer, req.Step
			r.Events[j].Body = b
		case journal.ToolCall:
			b.Producer, b.Step = req.Producer, req.Step
			r.Events[j].Body = b
		case journal.Reasoning:
			b.Producer, b.Step = req.Producer, req.Step
			r.Events[j].Body = b
		}
	}
	r.Attempts = 1
	return &r, nil
}

// box is a Toolbox with one tool, "look", that echoes its argument "q".
type box struct{ ran []string }

func (x *box) Tools() []render.Tool {
	return []render.Tool{{Name: "look", Description: "look something up", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}}
}

func (x *box) Run(_ context.Context, name string, args json.RawMessage) ToolOutput {
	var a struct{ Q string }
	_ = json.Unmarshal(args, &a)
	x.ran = append(x.ran, a.Q)
	return ToolOutput{Content: "found " + a.Q}
}

func envFor(b *book, c *script, x *box) *Env {
	return &Env{Events: b.events, Append: b.append, Tools: x,
		Client:  func(render.API) (provider.Client, error) { return c, nil },
		BaseURL: func(string, render.API) string { return "http://127.0.0.1:1/v1" },
		Secret:  func(string) (string, bool) { return "", false }}
}

func step(t *testing.T, b *book, c *script, x *box) (Report, error) {
	t.Helper()
	env := envFor(b, c, x)
	return Step(context.Background(), env)
}

func call(id, q string) provider.Output {
	return provider.Output{Kind: journal.KindToolCall, Body: journal.ToolCall{CallID: id, Name: "look", Arguments: json.RawMessage(`{"q":"` + q + `"}`)}}
}

func text(s string) provider.Output {
	return provider.Output{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Text: s}}
}

// A whole turn: the model calls two tools in parallel, both run in order,
// the model answers, and the agent goes idle.
func TestTurnRunsToolsThenAnswers(t *testing.T) {
	b := newBook(t)
	b.add(journal.KindModelChange, sim)
	if _, err := step(t, b, nil, nil); !errors.Is(err, ErrIdle) {
		t.Fatalf("before any user message: %v, want idle", err)
	}
	b.add(journal.KindUser, journal.UserMessage{Text: "find a and b"})
	c := &script{answers: []provider.Response{{Events: []provider.Output{call("c1", "a"), call("c2", "b")}}, {Events: []provider.Output{text("a and b found")}}}}
	x := &box{}
	var actions []string
	for i := 0; i < 10; i++ {
		rep, err := step(t, b, c, x)
		if errors.Is(err, ErrIdle) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		actions = append(actions, rep.Action.String())
	}
	if got := strings.Join(actions, ","); got != "model,tool,tool,model" {
		t.Fatalf("actions %s", got)
	}
	if strings.Join(x.ran, ",") != "a,b" {
		t.Fatalf("tools ran %v", x.ran)
	}
	if len(c.got) != 2 || c.got[0].Step == c.got[1].Step {
		t.Fatalf("requests %d, steps must differ", len(c.got))
	}
	// The second request carries both results.
	if body := string(c.got[1].Body); !strings.Contains(body, "found a") || !strings.Contains(body, "found b") {
		t.Fatalf("second request lacks the results: %s", body)
	}
}

// A model call cancelled (a freeze) journals nothing; the next step makes
// the same call again under the same step ID.
func TestCancelledModelCallIsRepeated(t *testing.T) {
	b := newBook(t)
	b.add(journal.KindModelChange, sim)
	b.add(journal.KindUser, journal.UserMessage{Text: "hi"})
	c := &script{block: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := len(b.events)
	if _, err := Step(ctx, envFor(b, c, nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want canceled", err)
	}
	if len(b.events) != n {
		t.Fatalf("a cancelled call journaled %d events", len(b.events)-n)
	}
	c2 := &script{answers: []provider.Response{{Events: []provider.Output{text("hello")}}}}
	if _, err := step(t, b, c2, nil); err != nil {
		t.Fatal(err)
	}
	if c.got[0].Step != c2.got[0].Step || !bytesEqual(c.got[0].Body, c2.got[0].Body) {
		t.Fatal("the repeated call is not the same request")
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// A tool a crash cut is answered with the explicit interrupted result, not
// run again, and the loop goes on.
func TestInterruptedToolIsNotRunAgain(t *testing.T) {
	b := newBook(t)
	b.add(journal.KindModelChange, sim)
	b.add(journal.KindUser, journal.UserMessage{Text: "go"})
	c := &script{answers: []provider.Response{{Events: []provider.Output{call("c1", "a")}}, {Events: []provider.Output{text("ok")}}}}
	x := &box{}
	if _, err := step(t, b, c, x); err != nil {
		t.Fatal(err)
	}
	env := envFor(b, c, x)
	env.Interrupted = "c1"
	rep, err := Step(context.Background(), env)
	if err != nil || rep.Action != Interrupted {
		t.Fatalf("rep %+v err %v", rep, err)
	}
	if len(x.ran) != 0 {
		t.Fatal("the interrupted tool ran again")
	}
	var r journal.ToolResult
	_ = json.Unmarshal(b.events[len(b.events)-1].Body, &r)
	if !r.IsError || r.Content != InterruptedResult {
		t.Fatalf("result %+v", r)
	}
	if _, err := step(t, b, c, x); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c.got[1].Body), "interrupted") {
		t.Fatal("the model is not told the tool was interrupted")
	}
}

// A 400 blocks the agent with the provider's message; a 503 that outlived
// its retries is an ordinary error (tried again later).
func TestRefusedRequestBlocks(t *testing.T) {
	b := newBook(t)
	b.add(journal.KindModelChange, sim)
	b.add(journal.KindUser, journal.UserMessage{Text: "hi"})
	c := &script{errs: []error{&provider.Error{Provider: "openai", Status: 400, Message: "messages.1: tool_call_id missing"}}}
	_, err := step(t, b, c, nil)
	var be *BlockedError
	if !errors.As(err, &be) || !strings.Contains(be.Reason, "tool_call_id missing") {
		t.Fatalf("err %v, want blocked with the provider's message", err)
	}
	c = &script{errs: []error{&provider.Error{Provider: "openai", Status: 503}}}
	if _, err = step(t, b, c, nil); err == nil || errors.As(err, &be) {
		t.Fatalf("503: %v, want an error that is not blocked", err)
	}
}

// Secrets are scrubbed from what the model and the tools produced, and a
// reasoning text that changed loses its signature.
func TestSecretsScrubbed(t *testing.T) {
	b := newBook(t)
	b.add(journal.KindModelChange, sim)
	b.add(journal.KindUser, journal.UserMessage{Text: "hi"})
	c := &script{answers: []provider.Response{{Events: []provider.Output{
		{Kind: journal.KindReasoning, Body: journal.Reasoning{Text: "the key is hunter2-secret", Signature: "sig"}},
		text("key hunter2-secret"), call("c1", "hunter2-secret")}}}}
	x := &box{}
	env := envFor(b, c, x)
	env.Scrub = func(s string) string { return strings.ReplaceAll(s, "hunter2-secret", "[secret K]") }
	if _, err := Step(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	env = envFor(b, c, x)
	env.Scrub = func(s string) string { return strings.ReplaceAll(s, "hunter2-secret", "[secret K]") }
	if _, err := Step(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	for _, e := range b.events {
		if strings.Contains(string(e.Body), "hunter2") {
			t.Fatalf("secret journaled in %s: %s", e.Kind, e.Body)
		}
		if e.Kind == journal.KindReasoning && strings.Contains(string(e.Body), "sig") {
			t.Fatalf("scrubbed reasoning kept its signature: %s", e.Body)
		}
	}
}

// A turn is bounded: the agent blocks instead of calling tools forever.
func TestTurnBound(t *testing.T) {
	b := newBook(t)
	b.add(journal.KindModelChange, sim)
	b.add(journal.KindUser, journal.UserMessage{Text: "loop"})
	var answers []provider.Response
	for i := 0; i < 5; i++ {
		answers = append(answers, provider.Response{Events: []provider.Output{call("c"+string(rune('0'+i)), "x")}})
	}
	c := &script{answers: answers}
	x := &box{}
	var err error
	for i := 0; i < 20; i++ {
		env := envFor(b, c, x)
		env.MaxTurnSteps = 3
		if _, err = Step(context.Background(), env); err != nil {
			break
		}
	}
	var be *BlockedError
	if !errors.As(err, &be) || len(c.got) != 3 {
		t.Fatalf("err %v after %d calls, want blocked after 3", err, len(c.got))
	}
}

// A remote provider without its key blocks with the secret's name; a
// loopback endpoint is called without one.
func TestMissingKey(t *testing.T) {
	b := newBook(t)
	b.add(journal.KindModelChange, journal.ModelChange{Provider: "anthropic", API: "messages", Model: "claude-sonnet-4-5"})
	b.add(journal.KindUser, journal.UserMessage{Text: "hi"})
	c := &script{answers: []provider.Response{{Events: []provider.Output{text("hello")}}}}
	env := envFor(b, c, nil)
	env.BaseURL = func(string, render.API) string { return "" }
	_, err := Step(context.Background(), env)
	var be *BlockedError
	if !errors.As(err, &be) || !strings.Contains(be.Reason, "ANTHROPIC_API_KEY") {
		t.Fatalf("err %v", err)
	}
	if _, err := step(t, b, c, nil); err != nil {
		t.Fatalf("loopback: %v", err)
	}
}

// A model call that outlives the call timeout is an ordinary failure
// (tried again by a later step), journals nothing, and is not a block.
func TestCallTimeout(t *testing.T) {
	b := newBook(t)
	b.add(journal.KindModelChange, sim)
	b.add(journal.KindUser, journal.UserMessage{Text: "hi"})
	c := &script{block: make(chan struct{})}
	env := envFor(b, c, nil)
	env.CallTimeout = 10 * time.Millisecond
	n := len(b.events)
	_, err := Step(context.Background(), env)
	var be *BlockedError
	if err == nil || errors.As(err, &be) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("err %v", err)
	}
	if len(b.events) != n {
		t.Fatal("a timed-out call journaled events")
	}
}
