package rendertest

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
)

// Validate checks a rendered request body against the hard rules of the
// target's API (reference §1) and returns every violation, each worded as
// the provider words its 400 (reference §2), joined; nil if the body
// passes. The rules live in provider/sim, whose embedded model endpoint
// enforces the same ones on the wire; this is sim.Validate.
func Validate(t render.Target, body []byte) error { return sim.Validate(t, body) }

// Generic accessors over decoded JSON.

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// ValidateReport checks a render's report against its body: every call ID
// the report says was remapped is an ID the body carries (a remapping of a
// call sent without an ID, as Gemini sends other models' calls, is not
// something the body contains).
func ValidateReport(t render.Target, body []byte, rep *render.Report) error {
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("request body is not a JSON object: %w", err)
	}
	ids := bodyCallIDs(t.API, v)
	var errs []error
	for _, m := range rep.Remapped {
		if !ids[m.To] {
			errs = append(errs, fmt.Errorf("report: call ID %s remapped to %s, which the body does not carry", m.From, m.To))
		}
	}
	return errors.Join(errs...)
}

// bodyCallIDs returns the call IDs of the calls in a request body.
func bodyCallIDs(api render.API, v map[string]any) map[string]bool {
	ids := map[string]bool{}
	switch api {
	case render.OpenAIChat, render.Ollama:
		for _, m := range list(v["messages"]) {
			for _, tc := range list(obj(m)["tool_calls"]) {
				ids[str(obj(tc)["id"])] = true
			}
		}
	case render.OpenAIResponses:
		for _, it := range list(v["input"]) {
			if str(obj(it)["type"]) == "function_call" {
				ids[str(obj(it)["call_id"])] = true
			}
		}
	case render.Anthropic:
		for _, m := range list(v["messages"]) {
			for _, b := range list(obj(m)["content"]) {
				if str(obj(b)["type"]) == "tool_use" {
					ids[str(obj(b)["id"])] = true
				}
			}
		}
	case render.Gemini:
		for _, content := range list(v["contents"]) {
			for _, p := range list(obj(content)["parts"]) {
				if id := str(obj(obj(p)["functionCall"])["id"]); id != "" {
					ids[id] = true
				}
			}
		}
	}
	return ids
}
