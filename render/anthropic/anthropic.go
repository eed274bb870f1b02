// Package anthropic renders a journal into an Anthropic Messages request
// body, as the official SDK's param type
// (github.com/anthropics/anthropic-sdk-go), whose JSON is the wire JSON.
//
// Anthropic's rules (reference §1.3) are met here and in package render:
// roles alternate (same-role neighbours are merged), every result of a
// step is in one user message ahead of any text, tool_use IDs match
// ^[a-zA-Z0-9_-]+$, every tool in history is declared, thinking blocks are
// the model's own, byte-identical and first in their message. Pure, like
// package render.
package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	sdk "github.com/anthropics/anthropic-sdk-go"
)

// InstructionPrefix starts the user-side text that carries an instruction
// from the middle of the journal: the Messages API has only the top-level
// system parameter.
const InstructionPrefix = "[System instruction]\n"

// Render renders events for t into a Messages request. t.API must be
// render.Anthropic.
func Render(events []journal.Event, t render.Target) (sdk.MessageNewParams, *render.Report, error) {
	if t.API != render.Anthropic {
		return sdk.MessageNewParams{}, nil, fmt.Errorf("%w: anthropic.Render needs API %s, not %q", render.ErrTarget, render.Anthropic, t.API)
	}
	p, err := render.NewPlan(events, t)
	if err != nil {
		return sdk.MessageNewParams{}, nil, err
	}
	return FromPlan(p), &p.Report, nil
}

// FromPlan turns a plan into Messages params.
func FromPlan(p *render.Plan) sdk.MessageNewParams {
	params := sdk.MessageNewParams{Model: sdk.Model(p.Target.Model), MaxTokens: maxTokens(p.Caps)}
	lead := p.Leading()
	for _, it := range p.Items[:lead] {
		params.System = append(params.System, sdk.TextBlockParam{Text: it.Text})
	}
	var msgs []sdk.MessageParam
	for _, it := range p.Items[lead:] {
		msgs = append(msgs, messages(it)...)
	}
	params.Messages = merge(msgs)
	for _, tool := range p.Tools {
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: toolParam(tool)})
	}
	if p.Thinking {
		params.Thinking = thinking(p.Caps)
	}
	return params
}

func maxTokens(c render.Caps) int64 {
	if c.MaxOutput > 0 {
		return int64(c.MaxOutput)
	}
	return 4096
}

// thinking is adaptive thinking for models that always think, else an
// explicit budget of half the output, at least the API's minimum.
func thinking(c render.Caps) sdk.ThinkingConfigParamUnion {
	if c.Thinking == render.ThinkingAlways {
		return sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
	}
	budget := max(int64(c.MaxOutput/2), render.MinThinkingBudget)
	return sdk.ThinkingConfigParamOfEnabled(budget)
}

// messages renders one item; merge joins same-role neighbours later.
func messages(it render.Item) []sdk.MessageParam {
	switch it.Kind {
	case render.ItemInstruction:
		// Even for models whose capability row has MidSystem: the Messages
		// API refuses role "system" inside messages, and no documented
		// form of a mid-conversation system block exists yet.
		return []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(InstructionPrefix + it.Text))}
	case render.ItemUser:
		return []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(it.Text))}
	}
	return step(it.Step)
}

// step is the assistant message of a step, then a user message with one
// tool_result per call, in call order.
func step(st *render.Step) []sdk.MessageParam {
	var blocks []sdk.ContentBlockParamUnion
	for _, pt := range st.Parts {
		switch pt.Kind {
		case render.PartReasoning:
			if pt.Redacted {
				blocks = append(blocks, sdk.NewRedactedThinkingBlock(pt.Encrypted))
			} else {
				blocks = append(blocks, sdk.NewThinkingBlock(pt.Signature, pt.Text))
			}
		case render.PartText:
			blocks = append(blocks, sdk.NewTextBlock(pt.Text))
		case render.PartCall:
			blocks = append(blocks, sdk.NewToolUseBlock(pt.Call.ID, pt.Call.Arguments, pt.Call.Name))
		}
	}
	out := []sdk.MessageParam{sdk.NewAssistantMessage(blocks...)}
	if len(st.Results) == 0 {
		return out
	}
	var results []sdk.ContentBlockParamUnion
	for _, r := range st.Results {
		results = append(results, toolResult(r))
	}
	return append(out, sdk.NewUserMessage(results...))
}

// toolResult is a tool_result block; an empty result has no content
// block, because the API rejects empty text blocks.
func toolResult(r render.Result) sdk.ContentBlockParamUnion {
	if r.Content != "" {
		return sdk.NewToolResultBlock(r.CallID, r.Content, r.IsError)
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &sdk.ToolResultBlockParam{ToolUseID: r.CallID, IsError: sdk.Bool(r.IsError)}}
}

// merge joins neighbouring messages of the same role. A user message that
// follows tool results is appended after them, so results stay first.
func merge(msgs []sdk.MessageParam) []sdk.MessageParam {
	var out []sdk.MessageParam
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = append(out[n-1].Content, m.Content...)
			continue
		}
		out = append(out, m)
	}
	return out
}

// toolParam declares a tool. Its JSON Schema's "properties" and
// "required" go to their fields, every other member except "type" to
// the extra fields, each value's bytes verbatim.
func toolParam(t render.Tool) *sdk.ToolParam {
	tp := &sdk.ToolParam{Name: t.Name}
	if t.Description != "" {
		tp.Description = sdk.String(t.Description)
	}
	for _, m := range render.Members(t.Parameters) {
		switch m.Key {
		case "type":
		case "properties":
			tp.InputSchema.Properties = m.Value
		case "required":
			var req []string
			if json.Unmarshal(m.Value, &req) == nil {
				tp.InputSchema.Required = req
				break
			}
			fallthrough
		default:
			if tp.InputSchema.ExtraFields == nil {
				tp.InputSchema.ExtraFields = map[string]any{}
			}
			tp.InputSchema.ExtraFields[m.Key] = m.Value
		}
	}
	if tp.InputSchema.Properties == nil {
		// input_schema is required; the SDK omits a zero schema, so a
		// tool without parameters (a stub) still declares an empty object.
		tp.InputSchema.Properties = json.RawMessage(`{}`)
	}
	return tp
}
