package agent

import (
	"context"
	"fmt"

	"github.com/agentcapsule/capsule/journal"
)

// InterruptedResult is the content of the result journaled for a call
// whose tool was running when its node stopped: the model is told, and
// the tool is not run again.
const InterruptedResult = "interrupted: the node running this agent stopped while the tool ran; the tool was not run again and its effects, if any, are unknown. Check the workspace before you rely on them."

// OutcomeUnknownResult is the content of the result journaled for an
// external call that was dispatched and whose result was never
// journaled: the effect may or may not have happened, and an operator
// records which (capsule agent effect).
const OutcomeUnknownResult = "interrupted: the node running this agent stopped after this call's external effect was dispatched; the tool was not run again and the outcome is unknown: the effect may or may not have happened. Do not repeat it; an operator records what happened (capsule agent effect)."

// interrupted journals the explicit error result of a call a crash or a
// move cut: outcome unknown when d, its dispatch, names an external effect.
func interrupted(env *Env, c journal.ToolCall, d *journal.ToolDispatch) error {
	r := journal.ToolResult{CallID: c.CallID, Name: c.Name, Content: InterruptedResult, IsError: true, Interrupted: true}
	if d != nil && d.Effect == journal.EffectExternal {
		r.Content, r.Outcome = OutcomeUnknownResult, journal.OutcomeUnknown
	}
	return finish(env, r)
}

// finish journals r and leaves the tool phase.
func finish(env *Env, r journal.ToolResult) error {
	if err := env.Append([]journal.Kind{journal.KindToolResult}, []any{r}); err != nil {
		return err
	}
	if env.Enter != nil {
		return env.Enter(PhaseNone, "")
	}
	return nil
}

// errorResult journals an error result the model reads instead of a run.
func errorResult(env *Env, c journal.ToolCall, format string, args ...any) error {
	return finish(env, journal.ToolResult{CallID: c.CallID, Name: c.Name, Content: fmt.Sprintf(format, args...), IsError: true})
}

// runTool runs one call and journals its result. A tool whose rule is
// approval required runs only with an approval that binds to it (else the
// request is journaled and the agent waits); an external tool, or one
// that consumes an approval, runs only after its tool_dispatch is
// durable; the node records that the tool runs before it starts (Enter),
// so that a crash is answered by interrupted instead of a second run.
func runTool(ctx context.Context, env *Env, c journal.ToolCall, t *turn) error {
	switch {
	case env.Tools == nil:
		return errorResult(env, c, "no tool %q: this agent is offered no tools", c.Name)
	case len(c.Arguments) == 0 && c.RawArguments != "":
		return errorResult(env, c, "the arguments of %s are not valid JSON; send a JSON object that fits the tool's schema", c.Name)
	}
	if !offered(env.Tools, c.Name) {
		// Nothing runs, so nothing needs approval: the model named a tool
		// it was not offered.
		return errorResult(env, c, "no tool %q is offered to this agent; call one of the tools you were given", c.Name)
	}
	info := Describe(env.Tools, c.Name)
	d := journal.ToolDispatch{CallID: c.CallID, Effect: info.Effect, ArgumentsDigest: ArgumentsDigest(c.Arguments), ToolDigest: info.Digest}
	if info.Approval == ApprovalRequired {
		ok, err := approved(env, c, info, t, &d)
		if !ok || err != nil {
			return err
		}
	}
	if d.Effect == journal.EffectExternal || d.Approval != "" {
		if err := env.Append([]journal.Kind{journal.KindToolDispatch}, []any{d}); err != nil {
			return err
		}
	}
	return run(ctx, env, c)
}

// approved reports whether the call may run under its approval, naming
// the approval in d. Otherwise it journals what the call gets instead (an
// approval request, a denial's or a refusal's error result) and returns
// a *WaitingError while the call waits.
func approved(env *Env, c journal.ToolCall, info ToolInfo, t *turn, d *journal.ToolDispatch) (bool, error) {
	ce := t.effects[c.CallID]
	if ce.count > 1 {
		return false, errorResult(env, c, "refused (%s): the call ID %s appears %d times in one step, so an approval could not tell them apart; none of them was run. Call the tool again, once.", RefuseDuplicateCall, c.CallID, ce.count)
	}
	now := Binding{Arguments: d.ArgumentsDigest, Tool: info.Digest, Spec: env.SpecDigest}
	req, dec := ce.request()
	switch {
	case req == nil || now.check(req) != nil: // none yet, or made under another tool, spec or arguments
		return false, askApproval(env, c, info, now)
	case dec == nil:
		return false, &WaitingError{CallID: c.CallID, Name: c.Name, Request: req.ID}
	case dec.Decision != journal.DecisionApproved:
		msg := "denied by " + dec.By
		if dec.Reason != "" {
			msg += ": " + dec.Reason
		}
		return false, errorResult(env, c, "%s; the tool was not run. A retry is a new call and needs a new approval.", msg)
	}
	if used := t.consumer(dec.ID); used != nil {
		return false, errorResult(env, c, "refused (%s): approval %s was already consumed by dispatch %s; the tool was not run. A retry is a new call and needs a new approval.", RefuseConsumed, dec.ID, used.ID)
	}
	d.Approval = dec.ID
	return true, nil
}

// askApproval journals an approval request for the call and parks it.
func askApproval(env *Env, c journal.ToolCall, info ToolInfo, b Binding) error {
	r := journal.ApprovalRequest{CallID: c.CallID, Name: c.Name, ArgumentsDigest: b.Arguments, ToolDigest: b.Tool, SpecDigest: b.Spec, Rule: ruleOf(env.Tools, c.Name)}
	if r.SpecDigest == "" {
		r.SpecDigest = SpecDigest(nil) // no spec known: the digest of none
	}
	if err := env.Append([]journal.Kind{journal.KindApprovalRequest}, []any{r}); err != nil {
		return err
	}
	return &WaitingError{CallID: c.CallID, Name: c.Name}
}

// offered reports whether tb offers a tool named name to the model.
func offered(tb Toolbox, name string) bool {
	for _, t := range tb.Tools() {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ruleOf says why a call of name needs approval.
func ruleOf(tb Toolbox, name string) string {
	if d, ok := tb.(Described); ok {
		if _, ok := d.Info(name); ok {
			return "tool " + name + " requires approval"
		}
	}
	return "tool " + name + " is not described: approval required (the narrowest rule)"
}

// run runs the tool of c and journals its result.
func run(ctx context.Context, env *Env, c journal.ToolCall) error {
	if env.Enter != nil {
		if err := env.Enter(PhaseTool, c.CallID); err != nil {
			return err
		}
	}
	args := c.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	out := env.Tools.Run(ctx, c.Name, args)
	r := journal.ToolResult{CallID: c.CallID, Name: c.Name, Content: scrub(env, out.Content), IsError: out.IsError}
	if len(out.Full) > 0 && env.PutBlob != nil {
		full := []byte(scrub(env, string(out.Full)))
		mt := out.MediaType
		if mt == "" {
			mt = "text/plain; charset=utf-8"
		}
		att, err := env.PutBlob(c.Name+"-output.txt", mt, full)
		if err != nil {
			return fmt.Errorf("agent: store the output of %s: %w", c.Name, err)
		}
		r.Attachments = []journal.Attachment{att}
	}
	return finish(env, r)
}
