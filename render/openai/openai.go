// Package openai renders a journal into OpenAI request bodies: Chat
// Completions (also the shape of OpenAI-compatible servers: vLLM,
// llama.cpp, DeepSeek, Mistral) and the stateless Responses API
// (store:false). The bodies are the official SDK's param types
// (github.com/openai/openai-go/v3), whose JSON is the wire JSON.
//
// Like package render, this package is pure. Callers: the agent runtime,
// the render command and tests.
package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// Chat renders events for t into a Chat Completions request. t.API must
// be render.OpenAIChat.
func Chat(events []journal.Event, t render.Target) (openai.ChatCompletionNewParams, *render.Report, error) {
	if t.API != render.OpenAIChat {
		return openai.ChatCompletionNewParams{}, nil, fmt.Errorf("%w: openai.Chat needs API %s, not %q", render.ErrTarget, render.OpenAIChat, t.API)
	}
	p, err := render.NewPlan(events, t)
	if err != nil {
		return openai.ChatCompletionNewParams{}, nil, err
	}
	return ChatFromPlan(p), &p.Report, nil
}

// ChatFromPlan turns a plan into Chat Completions params: instructions in
// place as developer or system messages, each step as one assistant
// message followed by one tool message per call, contiguous and in call
// order.
func ChatFromPlan(p *render.Plan) openai.ChatCompletionNewParams {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(p.Target.Model)}
	for _, it := range p.Items {
		switch it.Kind {
		case render.ItemInstruction:
			params.Messages = append(params.Messages, instruction(p.Caps, it.Text))
		case render.ItemUser:
			params.Messages = append(params.Messages, openai.UserMessage(it.Text))
		case render.ItemStep:
			params.Messages = append(params.Messages, chatStep(it.Step)...)
		}
	}
	for _, tool := range p.Tools {
		params.Tools = append(params.Tools, chatTool(tool))
	}
	return params
}

func instruction(caps render.Caps, text string) openai.ChatCompletionMessageParamUnion {
	if caps.Developer {
		return openai.DeveloperMessage(text)
	}
	return openai.SystemMessage(text)
}

// chatStep is the assistant message of a step and its tool messages.
func chatStep(st *render.Step) []openai.ChatCompletionMessageParamUnion {
	var texts, reasoning []string
	var a openai.ChatCompletionAssistantMessageParam
	for _, pt := range st.Parts {
		switch pt.Kind {
		case render.PartText:
			texts = append(texts, pt.Text)
		case render.PartReasoning:
			reasoning = append(reasoning, pt.Text)
		case render.PartCall:
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       pt.Call.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: pt.Call.Name, Arguments: pt.Call.ArgumentsText},
				},
			})
		}
	}
	if len(texts) > 0 || len(a.ToolCalls) == 0 {
		a.Content.OfString = openai.String(strings.Join(texts, "\n\n"))
	}
	if len(reasoning) > 0 {
		// DeepSeek-style servers take the model's own reasoning back
		// beside the message; the Caps flag gates it (render.Caps.ReasoningContent).
		a.SetExtraFields(map[string]any{"reasoning_content": strings.Join(reasoning, "\n\n")})
	}
	out := []openai.ChatCompletionMessageParamUnion{{OfAssistant: &a}}
	for _, r := range st.Results {
		out = append(out, openai.ToolMessage(render.ResultText(r), r.CallID))
	}
	return out
}

func chatTool(t render.Tool) openai.ChatCompletionToolUnionParam {
	def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: parameters(t.Parameters)}
	if t.Description != "" {
		def.Description = openai.String(t.Description)
	}
	return openai.ChatCompletionFunctionTool(def)
}

// parameters is a tool's JSON Schema as the SDK's map, each member's
// bytes kept verbatim; a tool without one takes an empty object schema.
func parameters(schema json.RawMessage) map[string]any {
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return render.ObjectMap(schema)
}
