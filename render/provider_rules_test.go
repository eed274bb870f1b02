package render_test

// Request bodies providers refused (issue 10, items 18 to 24). Each test
// renders through mustRender, so its body passes the provider's
// validator in package rendertest, which carries the rule it pins.

import (
	"encoding/json"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	rt "github.com/agentcapsule/capsule/render/rendertest"
	"github.com/google/go-cmp/cmp"
)

// Issue 10 item 19: the models whose capability row says MidSystem get a
// mid-conversation instruction as user-side text, as every other Claude
// model does; the Messages API refuses role "system" in messages.
func TestAnthropicMidSystemModelsGetNoSystemRole(t *testing.T) {
	j := (&rt.Journal{}).System("Be terse.").User("Hi").Say(rt.Claude, "s1", "Hello.").
		Developer("Answer in French.").User("How are you?").Say(rt.Claude, "s2", "Bien.").
		Developer("Now in German.")
	for _, tg := range []render.Target{claudeMid, claudeOpus} {
		if !tg.Capabilities().MidSystem {
			t.Fatalf("%s: the capability table no longer flags MidSystem; pick a flagged model", tg.Model)
		}
		r := mustRender(t, j.Events(), tg)
		if d := cmp.Diff([]string{"user", "assistant", "user", "assistant", "user"}, roles(r.v["messages"])); d != "" {
			t.Errorf("%s: roles (-want +got):\n%s", tg.Model, d)
		}
		if has(r.body, `"role":"system"`) {
			t.Errorf("%s: role system inside messages: %s", tg.Model, r.body)
		}
	}
}

// Issue 10 item 20: arguments that are not a JSON object (invalid JSON
// kept as raw_arguments, an array, a scalar, null) reach OpenAI Chat and
// Responses as the text of the {"_raw": ...} object the object APIs get,
// never verbatim; an object stays byte-identical.
func TestOpenAIArgumentsAreAlwaysAJSONObject(t *testing.T) {
	args := `{"path":"/a","n":1}`
	j := (&rt.Journal{}).User("Go.").
		CallWith(journal.ToolCall{CallID: "c1", Name: "read_file", RawArguments: `{"path": "/tmp/x", "n": `, Producer: rt.GPT41, Step: "s1"}).
		Call(rt.GPT41, "s1", "c2", "read_file", `[1,2,3]`).
		Call(rt.GPT41, "s1", "c3", "read_file", `"just text"`).
		Call(rt.GPT41, "s1", "c4", "read_file", `42`).
		Call(rt.GPT41, "s1", "c5", "read_file", args).
		Result("c1", "", "a").Result("c2", "", "b").Result("c3", "", "c").Result("c4", "", "d").Result("c5", "", "e")
	want := []string{`{"_raw":"{\"path\": \"/tmp/x\", \"n\": "}`, `{"_raw":"[1,2,3]"}`, `{"_raw":"\"just text\""}`, `{"_raw":"42"}`, args}
	tools := rt.ToolSet("read_file")
	for _, tg := range []render.Target{withTools(chatGPT41, tools...), withTools(respGPT5, tools...)} {
		r := mustRender(t, j.Events(), tg)
		var got []string
		if tg.API == render.OpenAIChat {
			for _, c := range list(obj(at(r.v["messages"], 1))["tool_calls"]) {
				got = append(got, str(obj(obj(c)["function"])["arguments"]))
			}
		} else {
			for _, it := range list(r.v["input"]) {
				if str(obj(it)["type"]) == "function_call" {
					got = append(got, str(obj(it)["arguments"]))
				}
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: arguments (-want +got):\n%s", tg.API, d)
		}
		for _, a := range got {
			if !json.Valid([]byte(a)) {
				t.Errorf("%s: arguments %q are not JSON", tg.API, a)
			}
		}
	}
}

// Issue 10 item 18: whitespace-only text never becomes an Anthropic text
// block (the "\n\n" Claude emits before a tool call, a tool result of
// "\n", a user turn of "\n"), a final assistant message does not end in
// whitespace, and the report says what was dropped or trimmed. The
// tool_result block itself stays.
func TestAnthropicWhitespaceOnlyText(t *testing.T) {
	j := (&rt.Journal{}).System("Be terse.").User("Read /a.").
		Say(rt.Claude, "s1", "\n\n").Call(rt.Claude, "s1", "toolu_1", "read_file", `{"path":"/a"}`).
		Result("toolu_1", "read_file", "\n").
		User("\n").
		Say(rt.Claude, "s2", "The file is empty.\n\n")
	r := mustRender(t, j.Events(), withTools(claude, rt.ToolSet("read_file")...))
	msgs := list(r.v["messages"])
	if d := cmp.Diff([]string{"user", "assistant", "user", "assistant"}, roles(msgs)); d != "" {
		t.Fatalf("roles (-want +got):\n%s\nbody: %s", d, r.body)
	}
	if d := cmp.Diff([]string{"tool_use"}, blockTypes(msgs[1])); d != "" {
		t.Errorf("the whitespace text before the call should be dropped (-want +got):\n%s", d)
	}
	res := obj(at(obj(msgs[2])["content"], 0))
	if str(res["type"]) != "tool_result" || str(res["tool_use_id"]) != "toolu_1" || res["content"] != nil {
		t.Errorf("the tool_result must stay, without its whitespace content: %s", compact(res))
	}
	if got := str(obj(at(obj(msgs[3])["content"], 0))["text"]); got != "The file is empty." {
		t.Errorf("final assistant text = %q, want its trailing whitespace trimmed", got)
	}
	want := []render.WhitespaceNote{
		{Event: 2, What: render.BlankAssistantText},
		{Event: 4, What: render.BlankToolResult, CallID: "toolu_1"},
		{Event: 5, What: render.BlankUserText},
		{Event: 6, What: render.TrailingWhitespace},
	}
	if d := cmp.Diff(want, r.report.Whitespace); d != "" {
		t.Errorf("report.Whitespace (-want +got):\n%s", d)
	}
	// Other APIs take the texts as they are.
	c := mustRender(t, j.Events(), withTools(chatGPT41, rt.ToolSet("read_file")...))
	if !has(c.body, `"content":"\n"`) || len(c.report.Whitespace) != 0 {
		t.Errorf("openai-chat changed whitespace texts: %s", c.body)
	}
}

// Issue 10 item 23, first half: Gemini carries call IDs only for its own
// calls, so the report lists no remapping of another model's call (here
// two foreign calls share an ID, which used to be "remapped").
func TestGeminiReportsOnlyRemapsTheBodyCarries(t *testing.T) {
	j := (&rt.Journal{}).User("Weather?").
		Exchange(rt.Claude, "a1", "toolu_1", "get_weather", `{"city":"Paris"}`, "18C").
		Exchange(rt.Claude, "a2", "toolu_1", "get_weather", `{"city":"Rome"}`, "24C").
		User("Gemini now.").
		CallWith(journal.ToolCall{CallID: "g_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`), Producer: rt.Gemini3, Step: "m1", Signature: "Q2lJQg=="}).
		Result("g_1", "get_weather", "2C").
		CallWith(journal.ToolCall{CallID: "g_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Bergen"}`), Producer: rt.Gemini3, Step: "m2", Signature: "Q2lJQw=="}).
		Result("g_1", "get_weather", "5C")
	r := mustRender(t, j.Events(), withTools(gemini3, weatherTool))
	if len(r.report.Remapped) != 1 || r.report.Remapped[0].From != "g_1" {
		t.Errorf("remapped = %v, want only Gemini's own repeated g_1", r.report.Remapped)
	}
}

// Issue 10 item 23, second half: a Gemini 3 model's own thought signature
// on a final empty text part goes back to that model as journaled, as an
// empty text part (a part needs a data member); another model gets no
// such part.
func TestGeminiKeepsOwnSignatureOnEmptyText(t *testing.T) {
	sig := "RmluYWxTaWduYXR1cmU="
	j := (&rt.Journal{}).User("Hi").Say(rt.Gemini3, "m1", "Hello.").
		Add(journal.KindAssistant, journal.AssistantMessage{Text: "", Signature: sig, Producer: rt.Gemini3, Step: "m1"}).
		User("Bye")
	r := mustRender(t, j.Events(), gemini3)
	model := compact(at(r.v["contents"], 1))
	if want := `{"parts":[{"text":"Hello."},{"text":"","thoughtSignature":"` + sig + `"}],"role":"model"}`; model != want {
		t.Errorf("model content\n got %s\nwant %s", model, want)
	}
	for _, tg := range []render.Target{{API: render.Gemini, Model: "gemini-2.5-flash"}, claude, chatGPT41} {
		o := mustRender(t, j.Events(), tg)
		if has(o.body, sig) {
			t.Errorf("%s %s got another model's signature: %s", tg.API, tg.Model, o.body)
		}
	}
}

// switchBack is issue 10 item 22's journal: Claude (A) thinks and calls
// a tool, answers; after a user turn GPT (B) makes a call and gets its
// result; then the agent is back on A with no user turn between.
func switchBack() *rt.Journal {
	j := claudeLoop((&rt.Journal{}).User("Weather in C1?"), 1, "a1")
	j.Say(rt.Claude, "a2", "It is 1C.").User("And Rome?")
	return gptStep(j, "g1", "call_g1")
}

// Issue 10 item 22 (a): back on A in the middle of B's tool loop,
// thinking is off for the request (B's call cannot lead with A's
// thinking), but A's own earlier thinking is still replayed and A's
// messages are byte-identical to their render before the switch.
func TestAnthropicSwitchBackKeepsOwnThinking(t *testing.T) {
	tg := withTools(claude, weatherTool)
	before := claudeLoop((&rt.Journal{}).User("Weather in C1?"), 1, "a1")
	before.Say(rt.Claude, "a2", "It is 1C.").User("And Rome?")
	b := mustRender(t, before.Events(), tg)
	a := mustRender(t, switchBack().Events(), tg)
	if !a.report.ThinkingDisabled || a.v["thinking"] != nil {
		t.Errorf("thinking = %v, disabled %v: B's open call cannot lead with thinking", a.v["thinking"], a.report.ThinkingDisabled)
	}
	if a.report.ReasoningKept != 1 {
		t.Errorf("reasoning kept = %d, want A's own thinking (1)", a.report.ReasoningKept)
	}
	for i := 1; i <= 3; i++ { // A's call, its result, A's answer
		if got, want := compact(at(a.v["messages"], i)), compact(at(b.v["messages"], i)); got != want {
			t.Errorf("message %d changed after the switch:\n got %s\nwant %s", i, got, want)
		}
	}
}

// Issue 10 item 22 (b): A then continues B's tool loop with thinking and
// a call. The open assistant turn starts with B's tool_use, so thinking
// must be off (Sonnet) or B's step sent as text (Opus, which always
// thinks): the check looks at the whole open turn.
func TestAnthropicSwitchBackOpenTurnStartsWithForeignCall(t *testing.T) {
	j := claudeLoop(switchBack(), 2, "a3")
	s := mustRender(t, j.Events(), withTools(claude, weatherTool))
	if !s.report.ThinkingDisabled || s.v["thinking"] != nil {
		t.Errorf("sonnet: thinking = %v, want it disabled", s.v["thinking"])
	}
	o := mustRender(t, j.Events(), withTools(claudeOpus, weatherTool))
	if str(obj(o.v["thinking"])["type"]) != "adaptive" {
		t.Fatalf("opus: thinking = %v", o.v["thinking"])
	}
	if !contains(o.report.Textualized, "call_g1") {
		t.Errorf("opus: B's call should be text, textualized = %v", o.report.Textualized)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Issue 10 item 24: a journaled tool name outside an API's name rule
// (fs.read_file for Anthropic and OpenAI, mcp/github:create-issue for all
// but Ollama) goes by a mapped name in declarations, calls and results,
// the same in every render of the journal, reported in ToolNames and
// mapped back by JournalToolName; valid names are kept.
func TestToolNamesMappedToEachAPIsRule(t *testing.T) {
	j := (&rt.Journal{}).User("Read and file it.").
		Call(rt.Claude, "s1", "toolu_1", "fs.read_file", `{"path":"/a"}`).
		Call(rt.Claude, "s1", "toolu_2", "mcp/github:create-issue", `{"title":"x"}`).
		Call(rt.Claude, "s1", "toolu_3", "search", `{"q":"x"}`).
		Result("toolu_1", "fs.read_file", "A").Result("toolu_2", "mcp/github:create-issue", "#1").Result("toolu_3", "search", "hit").
		User("Thanks.")
	for _, base := range allTargets {
		for _, tools := range [][]render.Tool{nil, rt.ToolSet("fs.read_file", "search")} {
			tg := withTools(base, tools...)
			r := mustRender(t, j.Events(), tg)
			again := mustRender(t, j.Events(), tg)
			if string(r.body) != string(again.body) {
				t.Fatalf("%s: two renders differ", tg.API)
			}
			for _, name := range []string{"fs.read_file", "mcp/github:create-issue", "search"} {
				wire := name
				for _, m := range r.report.ToolNames {
					if m.From == name {
						wire = m.To
					}
				}
				if render.ValidToolName(tg.API, name) != (wire == name) {
					t.Errorf("%s: %q goes as %q", tg.API, name, wire)
				}
				if !render.ValidToolName(tg.API, wire) {
					t.Errorf("%s: mapped name %q breaks the API's rule", tg.API, wire)
				}
				if got := r.report.JournalToolName(wire); got != name {
					t.Errorf("%s: JournalToolName(%q) = %q, want %q", tg.API, wire, got, name)
				}
				if tg.API != render.Gemini && tg.API != render.OpenAIResponses && !has(r.body, `"`+wire+`"`) {
					t.Errorf("%s: %q not in the body: %s", tg.API, wire, r.body)
				}
			}
		}
	}
}

// JournalCallID inverts Report.Remapped, as JournalToolName inverts
// Report.ToolNames: the model's calls are journaled under the journal's
// IDs and names.
func TestReportMapsModelCallsBack(t *testing.T) {
	long := "fc_x|a-very-long-id-with|pipes|that-anthropic-refuses"
	j := (&rt.Journal{}).User("Go.").Exchange(rt.GPT5, "g1", long, "fs.read_file", `{}`, "A").User("More.")
	r := mustRender(t, j.Events(), claude)
	if len(r.report.Remapped) != 1 || len(r.report.ToolNames) != 1 {
		t.Fatalf("remapped %v, tool names %v", r.report.Remapped, r.report.ToolNames)
	}
	if got := r.report.JournalCallID(r.report.Remapped[0].To); got != long {
		t.Errorf("JournalCallID = %q, want %q", got, long)
	}
	if got := r.report.JournalCallID("toolu_unknown"); got != "toolu_unknown" {
		t.Errorf("an unmapped ID should come back as it is, got %q", got)
	}
	if got := r.report.JournalToolName(r.report.ToolNames[0].To); got != "fs.read_file" {
		t.Errorf("JournalToolName = %q", got)
	}
}

// Issue 18 item 12: with thinking off for the target (NoThinking, or a
// model without extended thinking), the model's own reasoning is not sent
// at all, not only out of the final message.
func TestAnthropicNoReasoningWithThinkingOff(t *testing.T) {
	haiku := journal.Producer{Provider: "anthropic", API: "messages", Model: "claude-3-5-haiku"}
	for _, c := range []struct {
		tg   render.Target
		prod journal.Producer
	}{
		{render.Target{API: render.Anthropic, Model: "claude-sonnet-4-6", NoThinking: true}, rt.Claude},
		{render.Target{API: render.Anthropic, Model: "claude-3-5-haiku"}, haiku},
	} {
		j := (&rt.Journal{}).User("Weather?").Think(c.prod, "a1", "THINK-a1", "SIG-a1").
			Exchange(c.prod, "a1", "toolu_1", "get_weather", `{"city":"Paris"}`, "18C").
			Think(c.prod, "a2", "THINK-a2", "SIG-a2").Say(c.prod, "a2", "18C.").User("Thanks.")
		r := mustRender(t, j.Events(), withTools(c.tg, weatherTool))
		if has(r.body, "THINK-") || has(r.body, `"type":"thinking"`) || r.v["thinking"] != nil {
			t.Errorf("%s: reasoning or thinking sent with thinking off: %s", c.tg.Model, r.body)
		}
		if r.report.ReasoningKept != 0 || r.report.ReasoningDropped != 2 {
			t.Errorf("%s: kept %d, dropped %d", c.tg.Model, r.report.ReasoningKept, r.report.ReasoningDropped)
		}
	}
}
