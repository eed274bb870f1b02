package anthropic

import (
	"encoding/json"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
)

// parse turns a whole message into journal bodies, in block order, with
// the usage last. The stop reason goes on the last text block.
func parse(msg *anthropic.Message, req *provider.Request) *provider.Response {
	stop := string(msg.StopReason)
	resp := &provider.Response{StopReason: stop}
	last := -1
	for _, b := range msg.Content {
		out, ok := block(b, req)
		if !ok {
			continue
		}
		if out.Kind == journal.KindAssistant {
			last = len(resp.Events)
		}
		resp.Events = append(resp.Events, out)
	}
	if last >= 0 {
		m := resp.Events[last].Body.(journal.AssistantMessage)
		m.StopReason = stop
		resp.Events[last].Body = m
	}
	resp.Events = append(resp.Events, provider.Output{Kind: journal.KindUsage, Body: journal.Usage{
		Producer: req.Producer, InputTokens: msg.Usage.InputTokens, OutputTokens: msg.Usage.OutputTokens}})
	return resp
}

// block is the journal body of one content block; blocks of server
// tools and other types the journal has no body for are skipped.
func block(b anthropic.ContentBlockUnion, req *provider.Request) (provider.Output, bool) {
	p, step := req.Producer, req.Step
	switch b.Type {
	case "thinking":
		return provider.Output{Kind: journal.KindReasoning, Body: journal.Reasoning{Producer: p, Step: step, Text: b.Thinking, Signature: b.Signature}}, true
	case "redacted_thinking":
		return provider.Output{Kind: journal.KindReasoning, Body: journal.Reasoning{Producer: p, Step: step, Encrypted: b.Data, Redacted: true}}, true
	case "text":
		return provider.Output{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Producer: p, Step: step, Text: b.Text}}, true
	case "tool_use":
		call := journal.ToolCall{CallID: b.ID, Name: b.Name, Producer: p, Step: step}
		call.Arguments, call.RawArguments = arguments(b.Input)
		return provider.Output{Kind: journal.KindToolCall, Body: call}, true
	}
	return provider.Output{}, false
}

// arguments splits what the model sent as a call's input: valid JSON is
// kept as sent, anything else is returned as raw text. Empty input is
// absent arguments.
func arguments(in []byte) (json.RawMessage, string) {
	if len(in) == 0 {
		return nil, ""
	}
	if json.Valid(in) {
		return json.RawMessage(append([]byte(nil), in...)), ""
	}
	return nil, string(in)
}
