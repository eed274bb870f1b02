package render_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	rt "github.com/agentcapsule/capsule/render/rendertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenJournal switches providers three times and exercises the repairs:
// signed thinking, encrypted Responses reasoning, a Gemini signature,
// parallel calls answered out of order, a mid-journal instruction, a long
// call ID and a call the machine died in.
func goldenJournal() []journal.Event {
	j := (&rt.Journal{}).System("You are a weather assistant. Be terse.").User("Weather in Paris and Rome?")
	j.Think(rt.Claude, "a1", "Two cities: call the tool twice.", "EqQBCkgIARABGAIiQL")
	j.Call(rt.Claude, "a1", "toolu_01", "get_weather", `{"city":"Paris"}`).
		Call(rt.Claude, "a1", "toolu_02", "get_weather", `{"city":"Rome"}`).
		Result("toolu_02", "get_weather", "Rome: 24C sunny").Result("toolu_01", "get_weather", "Paris: 18C cloudy")
	j.Say(rt.Claude, "a2", "Paris 18°C cloudy; Rome 24°C sunny.")
	j.Add(journal.KindModelChange, journal.ModelChange{Provider: "openai", API: "responses", Model: "gpt-5"})
	j.Developer("Answer in Celsius and Fahrenheit.").User("And tomorrow in Paris?")
	gptStep(j, "g1", "call_Xy|"+"q9Zr4"+"0123456789abcdefghij0123456789abcdefghij0123456789")
	j.Reason(journal.Reasoning{Producer: rt.GPT5, Step: "g2", ItemID: "rs_g2", Encrypted: "gAAAAB-g2", Summary: []string{"Convert units."}})
	j.Add(journal.KindAssistant, journal.AssistantMessage{Text: "Tomorrow: 20°C (68°F).", Producer: rt.GPT5, Step: "g2", ItemID: "msg_g2"})
	j.Add(journal.KindModelChange, journal.ModelChange{Provider: "google", API: "generateContent", Model: "gemini-3-pro"})
	j.User("Berlin too?")
	j.CallWith(journal.ToolCall{CallID: "g_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Berlin"}`),
		Producer: rt.Gemini3, Step: "m1", Signature: "Q2lJQkF3R2VtaW5p"})
	j.Add(journal.KindFrozen, journal.Frozen{Reason: "machine lost"})
	j.User("Hello? Berlin?")
	return j.Events()
}

func TestGolden(t *testing.T) {
	targets := map[string]render.Target{
		"openai-chat-gpt-4.1":       chatGPT41,
		"openai-chat-mistral":       {API: render.OpenAIChat, Provider: "mistral", Model: "mistral-large"},
		"openai-responses-gpt-5":    respGPT5,
		"anthropic-sonnet":          claude,
		"anthropic-opus-5-5":        claudeOpus,
		"gemini-3-pro":              gemini3,
		"ollama-qwen3":              ollamaQwen,
		"anthropic-sonnet-window":   {API: render.Anthropic, Model: "claude-sonnet-4-6", Window: 240},
		"openai-responses-window-1": {API: render.OpenAIResponses, Model: "gpt-5", Window: 190},
	}
	events := goldenJournal()
	for name, tg := range targets {
		t.Run(name, func(t *testing.T) {
			tg.Tools = []render.Tool{weatherTool}
			r := mustRender(t, events, tg)
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, r.body, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./render -run TestGolden -update)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("%s differs from %s; review the diff and rerun with -update:\n%s", name, path, pretty.Bytes())
			}
		})
	}
}
