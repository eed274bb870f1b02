package openai

import (
	"fmt"
	"strings"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// Responses renders events for t into a stateless Responses request
// (store:false, no previous_response_id: the journal is the state). t.API
// must be render.OpenAIResponses.
func Responses(events []journal.Event, t render.Target) (responses.ResponseNewParams, *render.Report, error) {
	if t.API != render.OpenAIResponses {
		return responses.ResponseNewParams{}, nil, fmt.Errorf("%w: openai.Responses needs API %s, not %q", render.ErrTarget, render.OpenAIResponses, t.API)
	}
	p, err := render.NewPlan(events, t)
	if err != nil {
		return responses.ResponseNewParams{}, nil, err
	}
	return ResponsesFromPlan(p), &p.Report, nil
}

// ResponsesFromPlan turns a plan into Responses params: the leading
// instructions as "instructions", later ones as developer or system
// messages in place; each step's reasoning, message and function_call
// items in journal order, then one function_call_output per call. For a
// reasoning model it asks for reasoning.encrypted_content, which is how
// the model's own reasoning comes back in the next stateless request.
func ResponsesFromPlan(p *render.Plan) responses.ResponseNewParams {
	params := responses.ResponseNewParams{Model: shared.ResponsesModel(p.Target.Model), Store: openai.Bool(false)}
	if p.Thinking {
		params.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	lead := p.Leading()
	var sys []string
	for _, it := range p.Items[:lead] {
		sys = append(sys, it.Text)
	}
	if len(sys) > 0 {
		params.Instructions = openai.String(strings.Join(sys, "\n\n"))
	}
	input := responses.ResponseInputParam{}
	for _, it := range p.Items[lead:] {
		switch it.Kind {
		case render.ItemInstruction:
			role := responses.EasyInputMessageRoleSystem
			if p.Caps.Developer {
				role = responses.EasyInputMessageRoleDeveloper
			}
			input = append(input, responses.ResponseInputItemParamOfMessage(it.Text, role))
		case render.ItemUser:
			input = append(input, responses.ResponseInputItemParamOfMessage(it.Text, responses.EasyInputMessageRoleUser))
		case render.ItemStep:
			input = append(input, responsesStep(it.Step)...)
		}
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	for _, tool := range p.Tools {
		params.Tools = append(params.Tools, responsesTool(tool))
	}
	return params
}

func responsesStep(st *render.Step) []responses.ResponseInputItemUnionParam {
	var out []responses.ResponseInputItemUnionParam
	for _, pt := range st.Parts {
		out = append(out, responsesPart(pt))
	}
	for _, r := range st.Results {
		item := responses.ResponseInputItemParamOfFunctionCallOutput(render.ResultText(r))
		item.OfFunctionCallOutput.CallID = openai.String(r.CallID)
		out = append(out, item)
	}
	return out
}

func responsesPart(pt render.Part) responses.ResponseInputItemUnionParam {
	switch pt.Kind {
	case render.PartReasoning:
		summary := []responses.ResponseReasoningItemSummaryParam{}
		for _, s := range pt.Summary {
			summary = append(summary, responses.ResponseReasoningItemSummaryParam{Text: s})
		}
		r := responses.ResponseReasoningItemParam{ID: pt.ItemID, Summary: summary, EncryptedContent: openai.String(pt.Encrypted)}
		return responses.ResponseInputItemUnionParam{OfReasoning: &r}
	case render.PartCall:
		item := responses.ResponseInputItemParamOfFunctionCall(pt.Call.ArgumentsText, pt.Call.ID, pt.Call.Name)
		if pt.ItemID != "" {
			item.OfFunctionCall.ID = openai.String(pt.ItemID)
		}
		return item
	}
	if pt.ItemID == "" {
		return responses.ResponseInputItemParamOfMessage(pt.Text, responses.EasyInputMessageRoleAssistant)
	}
	content := []responses.ResponseOutputMessageContentUnionParam{{
		OfOutputText: &responses.ResponseOutputTextParam{Text: pt.Text, Annotations: []responses.ResponseOutputTextAnnotationUnionParam{}},
	}}
	return responses.ResponseInputItemParamOfOutputMessage(content, pt.ItemID, responses.ResponseOutputMessageStatusCompleted)
}

func responsesTool(t render.Tool) responses.ToolUnionParam {
	f := responses.FunctionToolParam{Name: t.Name, Parameters: parameters(t.Parameters), Strict: openai.Bool(false)}
	if t.Description != "" {
		f.Description = openai.String(t.Description)
	}
	return responses.ToolUnionParam{OfFunction: &f}
}
