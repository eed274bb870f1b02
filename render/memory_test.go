package render_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	rt "github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
)

const notes = "# Notes\n- Paris was cloudy on Monday.\n"

// memoryJournal has two leading instructions, a step with a call, and a
// second user turn.
func memoryJournal() []journal.Event {
	j := (&rt.Journal{}).System("You are a weather assistant.").System("Be terse.").User("Weather in Paris?")
	j.Call(rt.GPT5, "g1", "call_1", "get_weather", `{"city":"Paris"}`).Result("call_1", "get_weather", "Paris: 18C cloudy")
	j.Say(rt.GPT5, "g2", "18°C, cloudy.")
	return j.User("And Rome?").Events()
}

// textOf is the text of a message's content: a string, or the texts of
// its parts joined.
func textOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	for _, p := range list(v) {
		b.WriteString(str(obj(p)["text"]))
	}
	return b.String()
}

// systemTexts returns, for each API, the texts of the request's system
// slot or leading system messages, in order, and the first message that
// follows them.
func systemTexts(api render.API, v map[string]any) (texts []string, next map[string]any) {
	switch api {
	case render.Anthropic:
		for _, b := range list(v["system"]) {
			texts = append(texts, str(obj(b)["text"]))
		}
		return texts, obj(at(v["messages"], 0))
	case render.Gemini:
		for _, p := range list(obj(v["systemInstruction"])["parts"]) {
			texts = append(texts, str(obj(p)["text"]))
		}
		return texts, obj(at(v["contents"], 0))
	case render.OpenAIResponses:
		if s := str(v["instructions"]); s != "" {
			texts = strings.Split(s, "\n\n")
		}
		return texts, obj(at(v["input"], 0))
	}
	msgs := list(v["messages"])
	i := 0
	for ; i < len(msgs); i++ {
		m := obj(msgs[i])
		if r := str(m["role"]); r != "system" && r != "developer" {
			break
		}
		texts = append(texts, textOf(m["content"]))
	}
	return texts, obj(at(msgs, i))
}

// FORMAT §6.4: on every API the working memory is one instruction right
// after the journal's leading instructions and before the conversation,
// the header then the file's text; the report gives its size.
func TestWorkingMemoryPlace(t *testing.T) {
	events := memoryJournal()
	for _, base := range allTargets {
		tg := withTools(base, weatherTool)
		tg.WorkingMemory = notes
		r := mustRender(t, events, tg)
		texts, next := systemTexts(tg.API, r.v)
		want := []string{"You are a weather assistant.", "Be terse.", render.WorkingMemoryHeader + notes}
		if tg.API == render.OpenAIResponses { // one instructions string, split at its blank lines
			want = []string{"You are a weather assistant.", "Be terse.", strings.TrimSuffix(render.WorkingMemoryHeader, "\n") + "\n# Notes\n- Paris was cloudy on Monday.\n"}
		}
		if strings.Join(texts, "|") != strings.Join(want, "|") {
			t.Errorf("%s: system texts %q, want %q", tg.API, texts, want)
		}
		if role := str(next["role"]); role != "user" || !strings.Contains(compact(next), "Weather in Paris?") {
			t.Errorf("%s: the conversation does not follow the block: %s", tg.API, compact(next))
		}
		if strings.Count(string(r.body), "Paris was cloudy") != 1 {
			t.Errorf("%s: the working memory is not in the request once:\n%s", tg.API, r.body)
		}
		if r.report.WorkingMemory != len(notes) {
			t.Errorf("%s: report says %d bytes of working memory, want %d", tg.API, r.report.WorkingMemory, len(notes))
		}
		var text strings.Builder
		if err := r.report.WriteText(&text); err != nil || !strings.Contains(text.String(), "working memory: 38 bytes, pinned after the instructions\n") {
			t.Errorf("%s: report text %q (%v)", tg.API, text.String(), err)
		}
	}
}

// FORMAT §6.4: an empty or whitespace-only working memory renders no
// block (the request is the one without), and without instructions the
// block comes first.
func TestWorkingMemoryEmptyAndAlone(t *testing.T) {
	events := memoryJournal()
	alone := (&rt.Journal{}).User("Hi").Events()
	for _, base := range allTargets {
		tg := withTools(base, weatherTool)
		plain := mustRender(t, events, tg)
		for _, mem := range []string{" \n\t", "\n"} {
			tg.WorkingMemory = mem
			if r := mustRender(t, events, tg); !bytes.Equal(r.body, plain.body) || r.report.WorkingMemory != 0 {
				t.Errorf("%s: working memory %q changed the request", tg.API, mem)
			}
		}
		tg.WorkingMemory = notes
		texts, next := systemTexts(tg.API, mustRender(t, alone, tg).v)
		if len(texts) != 1 || !strings.HasPrefix(texts[0], strings.TrimSuffix(render.WorkingMemoryHeader, "\n")) || str(next["role"]) != "user" {
			t.Errorf("%s: without instructions, system %q, then %s", tg.API, texts, compact(next))
		}
	}
}

// FORMAT §6.4: the golden journal with a working memory, one request per
// API. The goldens without one (TestGolden) are unchanged.
func TestGoldenWorkingMemory(t *testing.T) {
	targets := map[string]render.Target{
		"openai-chat-gpt-4.1": chatGPT41, "openai-responses-gpt-5": respGPT5, "anthropic-sonnet": claude,
		"gemini-3-pro": gemini3, "ollama-qwen3": ollamaQwen,
	}
	for name, tg := range targets {
		t.Run(name, func(t *testing.T) {
			tg.Tools, tg.WorkingMemory = []render.Tool{weatherTool}, notes
			r := mustRender(t, goldenJournal(), tg)
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, r.body, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			path := filepath.Join("testdata", "golden", "working-memory", name+".json")
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
				t.Fatalf("%v (run go test ./render -run TestGoldenWorkingMemory -update)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("%s differs from %s; review the diff and rerun with -update:\n%s", name, path, pretty.Bytes())
			}
		})
	}
}

// A change of the working memory between two calls of one Incremental
// changes the request, and the request is wire.Render's, byte for byte
// and report for report, at every step: changed, unchanged, emptied and
// back. The journal's segmentation is kept across a change.
func TestIncrementalWorkingMemory(t *testing.T) {
	events := rt.Long(400, rt.Claude)
	mems := []string{"", "- one\n", "- one\n", "- one\n- two\n", "", "", "- one\n- two\n"}
	for _, base := range rt.Targets {
		tg := base
		tg.Window, tg.Tools = 6_000, rt.ToolSet("read_file")
		var inc wire.Incremental
		var plans render.Incremental
		for step, n := 0, 300; n <= len(events); step, n = step+1, n+13 {
			tg.WorkingMemory = mems[step%len(mems)]
			want, wantRep, err := wire.Render(events[:n], tg)
			if err != nil {
				t.Fatalf("%s: %v", tg.API, err)
			}
			got, gotRep, err := inc.Render(events[:n], tg)
			if err != nil {
				t.Fatalf("%s: incremental: %v", tg.API, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s %s, %d events, memory %q: body differs:\n got %s\nwant %s", tg.API, tg.Model, n, tg.WorkingMemory, got, want)
			}
			if gotRep.WorkingMemory != wantRep.WorkingMemory || gotRep.Tokens != wantRep.Tokens {
				t.Fatalf("%s, %d events: report differs: %+v, want %+v", tg.API, n, gotRep, wantRep)
			}
			if has(got, "- one") != (tg.WorkingMemory != "") {
				t.Fatalf("%s, %d events: memory %q, body holds it: %v", tg.API, n, tg.WorkingMemory, has(got, "- one"))
			}
			if kept, err := render.KeepsSegmentation(&plans, events[:n], tg); err != nil || step > 0 && !kept {
				t.Fatalf("%s, %d events, memory %q: segmentation kept %v (%v)", tg.API, n, tg.WorkingMemory, kept, err)
			}
		}
	}
}
