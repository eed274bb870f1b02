package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// Report says what one step did.
type Report struct {
	Action Action
	// Step is the journal step ID of a model step.
	Step string
	// Call is the call a tool step ran or answered.
	Call string
	// Attempts is the number of HTTP requests a model step made.
	Attempts int
}

// Step takes one step. It returns ErrIdle when there is nothing to do,
// a *BlockedError when the agent cannot go on without an operator, a
// *WaitingError while a call waits for a decision on its approval, and
// the context's error when ctx was cancelled during a model call (nothing
// was journaled: the call is made again by a later step).
func Step(ctx context.Context, env *Env) (Report, error) {
	next, t, err := decide(env.Events, env.Interrupted, env.MaxTurnSteps)
	if err != nil {
		return Report{}, blocked(err, "the journal cannot be read: %v", err)
	}
	rep := Report{Action: next.Action}
	switch next.Action {
	case Idle:
		return rep, ErrIdle
	case Blocked:
		return rep, blocked(nil, "%s", next.Reason)
	case Interrupted:
		rep.Call = next.Call.CallID
		return rep, interrupted(env, next.Call, next.Dispatch)
	case ToolStep, Waiting:
		// A waiting call is looked at again: a request made under another
		// tool or spec is asked again, one whose rule is now never runs.
		rep.Call = next.Call.CallID
		return rep, runTool(ctx, env, next.Call, t)
	}
	rep.Step = stepID(env.Events)
	rep.Attempts, err = modelStep(ctx, env, next.Model, rep.Step)
	return rep, err
}

// stepID names a model step after the conversation it continues (its
// newest user, assistant-side or result event): a call made again after a
// crash, a freeze or a move (nothing of it journaled; lifecycle events
// since do not count) gets the same ID.
func stepID(events []journal.Event) string {
	h := sha256.New()
	for i := len(events) - 1; i >= 0; i-- {
		if conversational(events[i].Kind) {
			h.Write([]byte(events[i].ID))
			break
		}
	}
	return "step-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// modelStep renders the journal for mc, calls the model, and journals
// what it produced in one write.
func modelStep(ctx context.Context, env *Env, mc journal.ModelChange, step string) (int, error) {
	t := TargetOf(mc)
	if env.Tools != nil {
		t.Tools = env.Tools.Tools()
	}
	t.WorkingMemory = env.WorkingMemory
	if err := t.Validate(); err != nil {
		return 0, blocked(err, "model %s/%s: %v", mc.Provider, mc.Model, err)
	}
	body, rr, err := env.renderer()(env.Events, t)
	if err != nil {
		return 0, blocked(err, "render for %s %s: %v", mc.Provider, mc.Model, err)
	}
	client, err := env.Client(t.API)
	if err != nil {
		return 0, blocked(err, "no client for %s: %v", t.API, err)
	}
	producer := t.Producer()
	req := &provider.Request{API: t.API, Model: mc.Model, Producer: producer, Step: step, Body: body}
	if env.BaseURL != nil {
		req.BaseURL = env.BaseURL(producer.Provider, t.API)
	}
	if name := KeyName(producer.Provider); name != "" && env.Secret != nil {
		v, ok := env.Secret(name)
		switch {
		case ok:
			req.Key = v
		case !loopback(req.BaseURL):
			return 0, blocked(nil, "the host has no secret %s for provider %s (capsule secret set %s)", name, producer.Provider, name)
		}
	}
	if env.OnText != nil {
		req.OnText = func(d string) { env.OnText(step, scrub(env, d)) }
	}
	if env.Enter != nil {
		if err := env.Enter(PhaseModel, ""); err != nil {
			return 0, err
		}
	}
	callCtx := ctx
	if env.CallTimeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, env.CallTimeout)
		defer cancel()
	}
	resp, err := client.Call(callCtx, req)
	if env.Enter != nil {
		if eerr := env.Enter(PhaseNone, ""); eerr != nil && err == nil {
			return 0, eerr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if callCtx.Err() != nil { // an ordinary failure: a later step tries again
			return attempts(err), fmt.Errorf("agent: model call: no answer within %s", env.CallTimeout)
		}
		msg := scrub(env, err.Error())
		if errors.Is(err, provider.ErrRefused) {
			return attempts(err), blocked(err, "the provider refused the request: %s", msg)
		}
		return attempts(err), fmt.Errorf("agent: model call: %s", msg)
	}
	kinds, bodies := outputs(env, resp, rr)
	if len(kinds) == 0 {
		// An empty generation: journal an empty answer so the turn ends
		// instead of calling the model again and again.
		kinds = append(kinds, journal.KindAssistant)
		bodies = append(bodies, journal.AssistantMessage{Producer: producer, Step: step, StopReason: resp.StopReason})
	}
	return resp.Attempts, env.Append(kinds, bodies)
}

func attempts(err error) int {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return pe.Attempts
	}
	return 1
}

// loopback reports whether base is a loopback URL (the embedded endpoint,
// a local server): such an endpoint may be called without a key.
func loopback(base string) bool {
	if base == "" {
		return false
	}
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	switch h := u.Hostname(); h {
	case "localhost", "::1":
		return true
	default:
		return len(h) > 4 && h[:4] == "127."
	}
}

// outputs turns a generation into journal bodies: tool names and call IDs
// mapped back to the journal's, every secret value scrubbed from text.
func outputs(env *Env, resp *provider.Response, rr *render.Report) ([]journal.Kind, []any) {
	var kinds []journal.Kind
	var bodies []any
	for _, o := range resp.Events {
		switch b := o.Body.(type) {
		case journal.AssistantMessage:
			b.Text = scrub(env, b.Text)
			if b.StopReason == "" {
				b.StopReason = resp.StopReason
			}
			o.Body = b
		case journal.Reasoning:
			text, summary := scrub(env, b.Text), scrubAll(env, b.Summary)
			if text != b.Text || !equal(summary, b.Summary) {
				// The signature covers the text as the model wrote it; the
				// scrubbed text can no longer be replayed with it.
				b.Signature, b.Encrypted = "", ""
			}
			b.Text, b.Summary = text, summary
			o.Body = b
		case journal.ToolCall:
			b.Name = rr.JournalToolName(b.Name)
			b.CallID = rr.JournalCallID(b.CallID)
			if s := scrub(env, string(b.Arguments)); s != string(b.Arguments) {
				if json.Valid([]byte(s)) {
					b.Arguments = []byte(s)
				} else {
					b.Arguments, b.RawArguments = nil, s
				}
			}
			b.RawArguments = scrub(env, b.RawArguments)
			o.Body = b
		case journal.Usage:
			b.EstimatedTokens = int64(rr.Tokens.Estimated)
			o.Body = b
		}
		kinds = append(kinds, o.Kind)
		bodies = append(bodies, o.Body)
	}
	return kinds, bodies
}

func scrub(env *Env, s string) string {
	if env.Scrub == nil || s == "" {
		return s
	}
	return env.Scrub(s)
}

func scrubAll(env *Env, ss []string) []string {
	if len(ss) == 0 {
		return ss
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = scrub(env, s)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
