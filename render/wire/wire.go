// Package wire renders a journal into the JSON request body of any
// supported API, dispatching on Target.API to the provider packages. It is
// the one entry point the agent runtime and the render command need.
// Pure, like package render.
package wire

import (
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/anthropic"
	"github.com/agentcapsule/capsule/render/gemini"
	"github.com/agentcapsule/capsule/render/ollama"
	"github.com/agentcapsule/capsule/render/openai"
)

// Render renders events for t and returns the request body as JSON, with
// the report of what the render did. The same events and target always
// give the same bytes.
func Render(events []journal.Event, t render.Target) ([]byte, *render.Report, error) {
	if err := t.Validate(); err != nil {
		return nil, nil, err
	}
	p, err := render.NewPlan(events, t)
	if err != nil {
		return nil, nil, err
	}
	body, err := Body(p)
	if err != nil {
		return nil, nil, err
	}
	return body, &p.Report, nil
}

// RenderIndex is Render for a journal read as it streamed by (see
// render.Index): the same bytes and report as Render of the same events,
// reading from the file only the bodies the plan keeps.
func RenderIndex(x *render.Index, t render.Target) ([]byte, *render.Report, error) {
	p, err := x.Plan(t)
	if err != nil {
		return nil, nil, err
	}
	body, err := Body(p)
	if err != nil {
		return nil, nil, err
	}
	return body, &p.Report, nil
}

// Body marshals a plan into its API's request body.
func Body(p *render.Plan) ([]byte, error) {
	var v any
	switch p.Target.API {
	case render.OpenAIChat:
		v = openai.ChatFromPlan(p)
	case render.OpenAIResponses:
		v = openai.ResponsesFromPlan(p)
	case render.Anthropic:
		v = anthropic.FromPlan(p)
	case render.Gemini:
		v = gemini.FromPlan(p)
	case render.Ollama:
		v = ollama.FromPlan(p)
	default:
		return nil, fmt.Errorf("%w: unknown API %q", render.ErrTarget, p.Target.API)
	}
	var b []byte
	var err error
	if m, ok := v.(json.Marshaler); ok {
		b, err = m.MarshalJSON() // the SDKs' encoders; json.Marshal would re-scan their output
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", p.Target.API, err)
	}
	return b, nil
}
