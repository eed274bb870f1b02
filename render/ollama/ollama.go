// Package ollama renders a journal into a request for Ollama's native chat
// API (POST /api/chat) as the official client's type
// (github.com/ollama/ollama/api.ChatRequest), whose JSON is the wire JSON.
// Tool arguments go as an object, with the journal's key order and value
// bytes; results name their call by tool_name and tool_call_id; the model's
// own reasoning comes back in "thinking". OpenAI-compatible local servers
// (Ollama's /v1, vLLM, llama.cpp) take the Chat renderer instead. Pure,
// like package render.
package ollama

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"github.com/ollama/ollama/api"
)

// Render renders events for t into a chat request. t.API must be
// render.Ollama.
func Render(events []journal.Event, t render.Target) (*api.ChatRequest, *render.Report, error) {
	if t.API != render.Ollama {
		return nil, nil, fmt.Errorf("%w: ollama.Render needs API %s, not %q", render.ErrTarget, render.Ollama, t.API)
	}
	p, err := render.NewPlan(events, t)
	if err != nil {
		return nil, nil, err
	}
	return FromPlan(p), &p.Report, nil
}

// FromPlan turns a plan into a non-streaming chat request.
func FromPlan(p *render.Plan) *api.ChatRequest {
	stream := false
	req := &api.ChatRequest{Model: p.Target.Model, Stream: &stream, Messages: []api.Message{}}
	if p.Caps.Thinking != render.ThinkingNone {
		req.Think = &api.ThinkValue{Value: p.Thinking}
	}
	for _, it := range p.Items {
		switch it.Kind {
		case render.ItemInstruction:
			req.Messages = append(req.Messages, api.Message{Role: "system", Content: it.Text})
		case render.ItemUser:
			req.Messages = append(req.Messages, api.Message{Role: "user", Content: it.Text})
		case render.ItemStep:
			req.Messages = append(req.Messages, step(it.Step)...)
		}
	}
	for _, t := range p.Tools {
		req.Tools = append(req.Tools, tool(t))
	}
	return req
}

func step(st *render.Step) []api.Message {
	var texts, thinking []string
	m := api.Message{Role: "assistant"}
	for _, pt := range st.Parts {
		switch pt.Kind {
		case render.PartText:
			texts = append(texts, pt.Text)
		case render.PartReasoning:
			thinking = append(thinking, pt.Text)
		case render.PartCall:
			m.ToolCalls = append(m.ToolCalls, api.ToolCall{ID: pt.Call.ID, Function: api.ToolCallFunction{
				Index: len(m.ToolCalls), Name: pt.Call.Name, Arguments: arguments(pt.Call),
			}})
		}
	}
	m.Content = strings.Join(texts, "\n\n")
	m.Thinking = strings.Join(thinking, "\n\n")
	out := []api.Message{m}
	for _, r := range st.Results {
		out = append(out, api.Message{Role: "tool", Content: render.ResultText(r), ToolName: r.Name, ToolCallID: r.CallID})
	}
	return out
}

// arguments keeps the journal's member order and each value's bytes.
func arguments(c render.Call) api.ToolCallFunctionArguments {
	args := api.NewToolCallFunctionArguments()
	for _, m := range render.Members(c.Arguments) {
		args.Set(m.Key, m.Value)
	}
	return args
}

// tool declares a tool. The client's parameter type is a fixed subset of
// JSON Schema, so the schema is decoded into it; members it has no field
// for are not sent.
func tool(t render.Tool) api.Tool {
	out := api.Tool{Type: "function", Function: api.ToolFunction{Name: t.Name, Description: t.Description}}
	if len(t.Parameters) == 0 || json.Unmarshal(t.Parameters, &out.Function.Parameters) != nil {
		out.Function.Parameters = api.ToolFunctionParameters{}
	}
	out.Function.Parameters.Type = "object"
	if out.Function.Parameters.Properties == nil {
		out.Function.Parameters.Properties = api.NewToolPropertiesMap()
	}
	return out
}
