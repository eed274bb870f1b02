package render_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	rt "github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
)

// rendered is one render under test: the body, its generic JSON and the report.
type rendered struct {
	body   []byte
	v      map[string]any
	report *render.Report
}

// mustRender renders events for tg, fails the test on any error or any
// violation of the provider's rules, and decodes the body.
func mustRender(t *testing.T, events []journal.Event, tg render.Target) rendered {
	t.Helper()
	body, rep, err := wire.Render(events, tg)
	if err != nil {
		t.Fatalf("%s %s: render: %v", tg.API, tg.Model, err)
	}
	if err := rt.Validate(tg, body); err != nil {
		t.Fatalf("%s %s: %v\nbody: %s", tg.API, tg.Model, err, body)
	}
	if err := rt.ValidateReport(tg, body, rep); err != nil {
		t.Fatalf("%s %s: %v\nbody: %s", tg.API, tg.Model, err, body)
	}
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return rendered{body: body, v: v, report: rep}
}

// Targets used by the acceptance cases, one per API.
var (
	chatGPT41   = render.Target{API: render.OpenAIChat, Model: "gpt-4.1"}
	respGPT5    = render.Target{API: render.OpenAIResponses, Model: "gpt-5"}
	claude      = render.Target{API: render.Anthropic, Model: "claude-sonnet-4-6"}
	claudeOpus  = render.Target{API: render.Anthropic, Model: "claude-opus-5-5"}
	claudeMid   = render.Target{API: render.Anthropic, Model: "claude-opus-4-8"}
	gemini3     = render.Target{API: render.Gemini, Model: "gemini-3-pro"}
	ollamaQwen  = render.Target{API: render.Ollama, Model: "qwen3"}
	allTargets  = []render.Target{chatGPT41, respGPT5, claude, gemini3, ollamaQwen}
	weatherTool = render.Tool{Name: "get_weather", Description: "Weather for a city.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
)

func withTools(tg render.Target, tools ...render.Tool) render.Target {
	tg.Tools = tools
	return tg
}

// Generic JSON accessors.

func list(v any) []any         { l, _ := v.([]any); return l }
func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func str(v any) string         { s, _ := v.(string); return s }
func at(v any, i int) any {
	l := list(v)
	if i < len(l) {
		return l[i]
	}
	return nil
}
func compact(v any) string           { b, _ := json.Marshal(v); return string(b) }
func has(body []byte, s string) bool { return bytes.Contains(body, []byte(s)) }

// roles lists the "role" of each element of a message list.
func roles(msgs any) []string {
	var out []string
	for _, m := range list(msgs) {
		out = append(out, str(obj(m)["role"]))
	}
	return out
}

// blockTypes lists the block types of an Anthropic message.
func blockTypes(m any) []string {
	var out []string
	for _, b := range list(obj(m)["content"]) {
		out = append(out, str(obj(b)["type"]))
	}
	return out
}

// resultsOf returns, per API, the call IDs answered in the body in order
// and whether each answer is marked as an error.
func resultsOf(api render.API, v map[string]any) (ids []string, errs []bool) {
	switch api {
	case render.OpenAIChat, render.Ollama:
		for _, m := range list(v["messages"]) {
			if str(obj(m)["role"]) == "tool" {
				ids = append(ids, str(obj(m)["tool_call_id"]))
				errs = append(errs, strings.HasPrefix(str(obj(m)["content"]), "Error: "))
			}
		}
	case render.OpenAIResponses:
		for _, it := range list(v["input"]) {
			if str(obj(it)["type"]) == "function_call_output" {
				ids = append(ids, str(obj(it)["call_id"]))
				errs = append(errs, strings.HasPrefix(str(obj(it)["output"]), "Error: "))
			}
		}
	case render.Anthropic:
		for _, m := range list(v["messages"]) {
			for _, b := range list(obj(m)["content"]) {
				if str(obj(b)["type"]) == "tool_result" {
					ids = append(ids, str(obj(b)["tool_use_id"]))
					errs = append(errs, obj(b)["is_error"] == true)
				}
			}
		}
	case render.Gemini:
		for _, c := range list(v["contents"]) {
			for _, p := range list(obj(c)["parts"]) {
				if fr := obj(obj(p)["functionResponse"]); fr != nil {
					ids = append(ids, str(fr["name"]))
					_, isErr := obj(fr["response"])["error"]
					errs = append(errs, isErr)
				}
			}
		}
	}
	return ids, errs
}
