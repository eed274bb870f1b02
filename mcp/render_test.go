package mcp_test

import (
	"bytes"
	"testing"

	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/mcp"
	"github.com/agentcapsule/capsule/render"
	rt "github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
)

// A journal that declares and calls "SERVER.TOOL" renders for every API
// within its tool-name rules: an API that refuses the dot gets a mapped
// name, in the declaration and the call alike, that maps back to the
// journal's name.
func TestNamespacedNamesRenderForEveryAPI(t *testing.T) {
	s, _ := start(t, mcp.Config{Servers: []envspec.Tool{stdio(t, "files.v2", "counter", nil)}})
	j := (&rt.Journal{}).User("echo hi").
		Call(rt.Claude, "s1", "call_1", "files.v2.echo", `{"text":"hi"}`).
		Result("call_1", "files.v2.echo", "hi")
	targets := []render.Target{
		{API: render.OpenAIChat, Model: "gpt-4.1"},
		{API: render.OpenAIResponses, Model: "gpt-5"},
		{API: render.Anthropic, Model: "claude-sonnet-4-6"},
		{API: render.Gemini, Model: "gemini-3-pro"},
		{API: render.Ollama, Model: "qwen3"},
	}
	for _, tg := range targets {
		t.Run(string(tg.API), func(t *testing.T) {
			tg.Tools = s.Tools()
			body, rep, err := wire.Render(j.Events(), tg)
			if err != nil {
				t.Fatal(err)
			}
			if err := rt.Validate(tg, body); err != nil {
				t.Fatalf("%v\n%s", err, body)
			}
			if err := rt.ValidateReport(tg, body, rep); err != nil {
				t.Fatalf("%v\n%s", err, body)
			}
			for _, name := range []string{"files.v2.echo", "files.v2.bump"} {
				wireName := name
				for _, m := range rep.ToolNames {
					if m.From == name {
						wireName = m.To
					}
				}
				if !render.ValidToolName(tg.API, wireName) {
					t.Errorf("%s goes by %q, which %s refuses", name, wireName, tg.API)
				}
				if !bytes.Contains(body, []byte(`"`+wireName+`"`)) {
					t.Errorf("%s (as %q) is not in the request:\n%s", name, wireName, body)
				}
				if back := rep.JournalToolName(wireName); back != name {
					t.Errorf("%q maps back to %q; want %q", wireName, back, name)
				}
			}
		})
	}
}
