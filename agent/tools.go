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

// interrupted journals the explicit error result of a call a crash cut.
func interrupted(env *Env, c journal.ToolCall) error {
	r := journal.ToolResult{CallID: c.CallID, Name: c.Name, Content: InterruptedResult, IsError: true}
	if err := env.Append([]journal.Kind{journal.KindToolResult}, []any{r}); err != nil {
		return err
	}
	if env.Enter != nil {
		return env.Enter(PhaseNone, "")
	}
	return nil
}

// runTool runs one call and journals its result. The node records that
// the tool runs before it starts (Enter), so that a crash is answered by
// interrupted instead of a second run.
func runTool(ctx context.Context, env *Env, c journal.ToolCall) error {
	r := journal.ToolResult{CallID: c.CallID, Name: c.Name}
	switch {
	case env.Tools == nil:
		r.Content, r.IsError = fmt.Sprintf("no tool %q: this agent is offered no tools", c.Name), true
	case len(c.Arguments) == 0 && c.RawArguments != "":
		r.Content, r.IsError = fmt.Sprintf("the arguments of %s are not valid JSON; send a JSON object that fits the tool's schema", c.Name), true
	default:
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
		r.Content, r.IsError = scrub(env, out.Content), out.IsError
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
	}
	if err := env.Append([]journal.Kind{journal.KindToolResult}, []any{r}); err != nil {
		return err
	}
	if env.Enter != nil {
		return env.Enter(PhaseNone, "")
	}
	return nil
}
