package render_test

// The 20 acceptance cases of the rendering reference, §7, one test each.
// Every render passes through mustRender, which runs the provider's static
// validator (package rendertest) on the bytes.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/gemini"
	rt "github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
	"github.com/google/go-cmp/cmp"
)

func TestAcceptance01_SameModelPassthroughChat(t *testing.T) {
	args := `{"city": "Paris",  "units":"C"}` // not canonical: the bytes must survive as they are
	j := (&rt.Journal{}).System("Be terse.").User("Weather in Paris?").
		AddRaw(journal.KindToolCall, []byte(`{"call_id":"call_1","name":"get_weather","arguments":`+args+
			`,"producer":{"provider":"openai","api":"chat","model":"gpt-4.1"},"step":"s1"}`)).
		Result("call_1", "get_weather", "18C cloudy").
		Say(rt.GPT41, "s2", "18°C, cloudy.").User("And tomorrow?")
	r := mustRender(t, j.Events(), withTools(chatGPT41, weatherTool))
	msgs := r.v["messages"]
	if d := cmp.Diff([]string{"system", "user", "assistant", "tool", "assistant", "user"}, roles(msgs)); d != "" {
		t.Errorf("roles (-want +got):\n%s", d)
	}
	call := obj(at(obj(at(msgs, 2))["tool_calls"], 0))
	if got := str(obj(call["function"])["arguments"]); got != args {
		t.Errorf("arguments = %q, want the journal's bytes %q", got, args)
	}
	if got := str(obj(at(msgs, 3))["tool_call_id"]); got != "call_1" {
		t.Errorf("tool_call_id = %q", got)
	}
}

func TestAcceptance02_DanglingCallAtEndAllTargets(t *testing.T) {
	j := (&rt.Journal{}).User("Weather?").Call(rt.Claude, "s1", "toolu_1", "get_weather", `{"city":"Paris"}`)
	for _, tg := range allTargets {
		r := mustRender(t, j.Events(), withTools(tg, weatherTool))
		ids, errs := resultsOf(tg.API, r.v)
		want := "toolu_1"
		if tg.API == render.Gemini {
			want = "get_weather" // Gemini pairs by name and order
		}
		if d := cmp.Diff([]string{want}, ids); d != "" {
			t.Errorf("%s: results (-want +got):\n%s", tg.API, d)
		}
		if len(errs) != 1 || !errs[0] {
			t.Errorf("%s: synthetic result not marked as an error: %s", tg.API, r.body)
		}
		if !has(r.body, render.SyntheticResult) {
			t.Errorf("%s: the fixed text %q is missing", tg.API, render.SyntheticResult)
		}
		if got := r.report.Synthesized; len(got) != 1 || got[0].CallID != "toolu_1" {
			t.Errorf("%s: report.Synthesized = %v", tg.API, got)
		}
	}
}

func TestAcceptance03_DanglingCallBeforeUser(t *testing.T) {
	j := (&rt.Journal{}).User("Weather?").Call(rt.Claude, "s1", "toolu_1", "get_weather", `{"city":"Paris"}`).User("Are you there?")
	r := mustRender(t, j.Events(), withTools(claude, weatherTool))
	msgs := list(r.v["messages"])
	last := msgs[len(msgs)-1]
	if d := cmp.Diff([]string{"tool_result", "text"}, blockTypes(last)); d != "" {
		t.Fatalf("last user message blocks (-want +got):\n%s", d)
	}
	if got := str(obj(at(obj(last)["content"], 1))["text"]); got != "Are you there?" {
		t.Errorf("text after the synthetic result = %q", got)
	}
	rc := mustRender(t, j.Events(), withTools(chatGPT41, weatherTool))
	if d := cmp.Diff([]string{"user", "assistant", "tool", "user"}, roles(rc.v["messages"])); d != "" {
		t.Errorf("chat roles (-want +got):\n%s", d)
	}
}

func TestAcceptance04_ParallelCallsOneMissing(t *testing.T) {
	j := (&rt.Journal{}).User("Three cities.").
		Call(rt.Claude, "s1", "c1", "get_weather", `{"city":"A"}`).
		Call(rt.Claude, "s1", "c2", "get_weather", `{"city":"B"}`).
		Call(rt.Claude, "s1", "c3", "get_weather", `{"city":"C"}`).
		Result("c3", "get_weather", "C: 3C").Result("c1", "get_weather", "A: 1C")
	for _, tg := range allTargets {
		r := mustRender(t, j.Events(), withTools(tg, weatherTool))
		ids, errs := resultsOf(tg.API, r.v)
		want := []string{"c1", "c2", "c3"}
		if tg.API == render.Gemini {
			want = []string{"get_weather", "get_weather", "get_weather"}
		}
		if d := cmp.Diff(want, ids); d != "" {
			t.Errorf("%s: results (-want +got):\n%s", tg.API, d)
		}
		if d := cmp.Diff([]bool{false, true, false}, errs); d != "" {
			t.Errorf("%s: error flags (-want +got):\n%s", tg.API, d)
		}
	}
	g := mustRender(t, j.Events(), withTools(gemini3, weatherTool))
	cs := list(g.v["contents"])
	resp := list(obj(cs[len(cs)-1])["parts"])
	if len(resp) != 3 || !strings.Contains(compact(resp[0]), "A: 1C") || !strings.Contains(compact(resp[2]), "C: 3C") {
		t.Errorf("gemini: want one user content with 3 functionResponse parts in call order, got %s", compact(resp))
	}
	c := mustRender(t, j.Events(), withTools(chatGPT41, weatherTool))
	if d := cmp.Diff([]string{"user", "assistant", "tool", "tool", "tool"}, roles(c.v["messages"])); d != "" {
		t.Errorf("chat: tool messages not contiguous (-want +got):\n%s", d)
	}
}

func TestAcceptance05_OrphanResult(t *testing.T) {
	j := (&rt.Journal{}).User("Hi").Result("r9", "get_weather", "ORPHAN-R9").
		Call(rt.Claude, "s1", "c1", "get_weather", `{}`).User("Still there?").
		Result("c1", "get_weather", "LATE-C1").Say(rt.Claude, "s2", "Yes.").User("ok")
	for _, tg := range allTargets {
		r := mustRender(t, j.Events(), withTools(tg, weatherTool))
		if has(r.body, "r9") || has(r.body, "ORPHAN-R9") || has(r.body, "LATE-C1") {
			t.Errorf("%s: an orphan result was sent: %s", tg.API, r.body)
		}
		if d := cmp.Diff([]string{"r9", "c1"}, r.report.Orphans); d != "" {
			t.Errorf("%s: report.Orphans (-want +got):\n%s", tg.API, d)
		}
	}
}

// claudeLoop is a Claude tool loop with signed thinking.
func claudeLoop(j *rt.Journal, n int, step string) *rt.Journal {
	id := fmt.Sprintf("toolu_%s", step)
	return j.Think(rt.Claude, step, "THINK-"+step, "SIG-"+step).
		Call(rt.Claude, step, id, "get_weather", fmt.Sprintf(`{"city":"C%d"}`, n)).
		Result(id, "get_weather", fmt.Sprintf("%dC", n))
}

func TestAcceptance06_AnthropicToOpenAI(t *testing.T) {
	j := (&rt.Journal{}).User("Weather?")
	claudeLoop(j, 1, "a1")
	claudeLoop(j, 2, "a2")
	j.Say(rt.Claude, "a3", "Done.").User("Thanks; now from GPT.")
	for _, tg := range []render.Target{chatGPT41, respGPT5} {
		r := mustRender(t, j.Events(), withTools(tg, weatherTool))
		if has(r.body, "THINK-") || has(r.body, "SIG-") {
			t.Errorf("%s: Claude's thinking reached GPT: %s", tg.API, r.body)
		}
		ids, _ := resultsOf(tg.API, r.v)
		if d := cmp.Diff([]string{"toolu_a1", "toolu_a2"}, ids); d != "" {
			t.Errorf("%s: pairs (-want +got):\n%s", tg.API, d)
		}
		if r.report.ReasoningDropped != 2 || r.report.ReasoningKept != 0 {
			t.Errorf("%s: reasoning kept %d dropped %d", tg.API, r.report.ReasoningKept, r.report.ReasoningDropped)
		}
	}
}

// gptStep is a GPT-5 Responses step with an encrypted reasoning item.
func gptStep(j *rt.Journal, step, callID string) *rt.Journal {
	j.Reason(journal.Reasoning{Producer: rt.GPT5, Step: step, ItemID: "rs_" + step, Encrypted: "ENC-" + step})
	return j.CallWith(journal.ToolCall{CallID: callID, Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`),
		Producer: rt.GPT5, Step: step, ItemID: "fc_" + step}).Result(callID, "get_weather", "20C")
}

func TestAcceptance07_ResponsesToAnthropic(t *testing.T) {
	j := (&rt.Journal{}).User("Weather?")
	gptStep(j, "g1", "call_abc|"+strings.Repeat("z", 100))
	gptStep(j, "g2", "call_def")
	j.Say(rt.GPT5, "g3", "20C in Rome.").User("Claude, your turn.")
	r := mustRender(t, j.Events(), withTools(claude, weatherTool))
	for _, s := range []string{"ENC-", "rs_g", "fc_g"} {
		if has(r.body, s) {
			t.Errorf("GPT reasoning or item ID %q reached Claude", s)
		}
	}
	idRE := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	uses := map[string]bool{}
	for _, m := range list(r.v["messages"]) {
		for _, b := range list(obj(m)["content"]) {
			switch str(obj(b)["type"]) {
			case "tool_use":
				id := str(obj(b)["id"])
				if !idRE.MatchString(id) {
					t.Errorf("tool_use id %q breaks the pattern", id)
				}
				uses[id] = true
			case "tool_result":
				if !uses[str(obj(b)["tool_use_id"])] {
					t.Errorf("tool_result %q answers no rendered tool_use", str(obj(b)["tool_use_id"]))
				}
			}
		}
	}
	if len(uses) != 2 || len(r.report.Remapped) != 1 {
		t.Errorf("uses %v, remapped %v", uses, r.report.Remapped)
	}
}

func TestAcceptance08_RoundTripClaudeGPTClaude(t *testing.T) {
	tg := withTools(claude, weatherTool)
	a := claudeLoop((&rt.Journal{}).User("Weather?"), 1, "a1")
	first := mustRender(t, a.Events(), tg)

	j := claudeLoop((&rt.Journal{}).User("Weather?"), 1, "a1")
	j.User("Now GPT.")
	gptStep(j, "g1", "call_g1")
	j.Say(rt.GPT5, "g2", "20C.").User("Back to Claude.")
	claudeLoop(j, 3, "a3")
	r1 := mustRender(t, j.Events(), tg)
	r2 := mustRender(t, j.Events(), tg)
	if !bytes.Equal(r1.body, r2.body) {
		t.Fatal("two renders of one journal differ")
	}
	msgs := list(r1.v["messages"])
	// The A-produced step renders byte-identically with or without B in between.
	if got, want := compact(msgs[1]), compact(list(first.v["messages"])[1]); got != want {
		t.Errorf("Claude's first step changed after the round trip:\n got %s\nwant %s", got, want)
	}
	for i, m := range msgs {
		types := blockTypes(m)
		if str(obj(m)["role"]) != "assistant" {
			continue
		}
		if !strings.Contains(compact(m), "toolu_a") { // a GPT step
			if strings.Contains(compact(types), "thinking") {
				t.Errorf("message %d: GPT's step carries thinking", i)
			}
			continue
		}
		if types[0] != "thinking" {
			t.Errorf("message %d: Claude's step does not start with its thinking: %v", i, types)
		}
		th := obj(at(obj(m)["content"], 0))
		step := strings.TrimPrefix(str(th["thinking"]), "THINK-")
		if str(th["signature"]) != "SIG-"+step {
			t.Errorf("message %d: thinking %q has signature %q", i, th["thinking"], th["signature"])
		}
	}
	if obj(r1.v["thinking"])["type"] != "enabled" || r1.report.ReasoningKept != 2 {
		t.Errorf("thinking %v, kept %d", r1.v["thinking"], r1.report.ReasoningKept)
	}
}

func TestAcceptance09_SwitchIntoThinkingModelMidLoop(t *testing.T) {
	j := claudeLoop((&rt.Journal{}).User("Weather?"), 1, "a1")
	gptStep(j, "g1", "call_g1") // GPT's open loop: call and result, no answer yet
	r := mustRender(t, j.Events(), withTools(claude, weatherTool))
	if _, on := r.v["thinking"]; on || !r.report.ThinkingDisabled {
		t.Errorf("optional thinking: want it disabled for this request, got %v", r.v["thinking"])
	}
	// Claude's own earlier thinking stays (issue 10 item 22): with
	// thinking off only a final assistant message may not hold it.
	if !has(r.body, `"thinking":"THINK-a1"`) || r.report.ReasoningKept != 1 {
		t.Errorf("Claude's own thinking should be replayed (kept %d): %s", r.report.ReasoningKept, r.body)
	}
	o := mustRender(t, j.Events(), withTools(claudeOpus, weatherTool))
	if str(obj(o.v["thinking"])["type"]) != "adaptive" {
		t.Fatalf("always-on thinking: want thinking on, got %v", o.v["thinking"])
	}
	// Sonnet's exchange is foreign to Opus too, and its results would lead
	// the last user turn once GPT's step is text, so it becomes text as well.
	if d := cmp.Diff([]string{"toolu_a1", "call_g1"}, o.report.Textualized); d != "" {
		t.Errorf("textualized (-want +got):\n%s", d)
	}
	msgs := list(o.v["messages"])
	last := compact(msgs[len(msgs)-1])
	if !strings.Contains(last, "Called get_weather(") || strings.Contains(last, "call_g1") {
		t.Errorf("the foreign exchange should be text in the last user turn: %s", last)
	}
}

func TestAcceptance10_SwitchIntoGemini3(t *testing.T) {
	sig := "R2VtaW5pU2lnbmF0dXJlQnl0ZXM="
	j := claudeLoop((&rt.Journal{}).User("Weather?"), 1, "a1")
	j.Call(rt.Claude, "a2", "toolu_p1", "get_weather", `{"city":"X"}`).Call(rt.Claude, "a2", "toolu_p2", "get_weather", `{"city":"Y"}`).
		Result("toolu_p1", "", "1").Result("toolu_p2", "", "2")
	j.User("Gemini now.").CallWith(journal.ToolCall{CallID: "g_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Z"}`),
		Producer: rt.Gemini3, Step: "m1", Signature: sig}).Result("g_1", "get_weather", "3")
	r := mustRender(t, j.Events(), withTools(gemini3, weatherTool))
	var sigs []string
	for _, c := range list(r.v["contents"]) {
		if str(obj(c)["role"]) != "model" {
			continue
		}
		for _, p := range list(obj(c)["parts"]) {
			if obj(p)["functionCall"] != nil {
				sigs = append(sigs, str(obj(p)["thoughtSignature"]))
				break
			}
		}
	}
	want := []string{gemini.PlaceholderSignature, gemini.PlaceholderSignature, sig}
	if d := cmp.Diff(want, sigs); d != "" {
		t.Errorf("first-call signatures per model turn (-want +got):\n%s", d)
	}
	if has(r.body, "SIG-a1") || has(r.body, "THINK-a1") {
		t.Error("Claude's signature or thinking reached Gemini")
	}
	if r.report.Placeholders != 2 {
		t.Errorf("placeholders = %d, want 2", r.report.Placeholders)
	}
}

func TestAcceptance11_IDNormalization(t *testing.T) {
	long1 := "fc_x|" + strings.Repeat("a", 450) + "1"
	long2 := "fc_x|" + strings.Repeat("a", 450) + "2"
	j := (&rt.Journal{}).User("Go.").
		Call(rt.GPT5, "g1", long1, "get_weather", `{}`).Call(rt.GPT5, "g1", long2, "get_weather", `{}`).
		Result(long1, "", "one").Result(long2, "", "two")
	mistral := render.Target{API: render.OpenAIChat, Provider: "mistral", Model: "mistral-large"}
	cases := []struct {
		tg render.Target
		re *regexp.Regexp
	}{
		{claude, regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)},
		{mistral, regexp.MustCompile(`^[A-Za-z0-9]{9}$`)},
		{chatGPT41, regexp.MustCompile(`^[a-zA-Z0-9_-]{1,40}$`)},
	}
	for _, c := range cases {
		r1 := mustRender(t, j.Events(), withTools(c.tg, weatherTool))
		r2 := mustRender(t, j.Events(), withTools(c.tg, weatherTool))
		if d := cmp.Diff(r1.report.Remapped, r2.report.Remapped); d != "" {
			t.Errorf("%s: mapping not stable:\n%s", c.tg.Model, d)
		}
		ids, _ := resultsOf(c.tg.API, r1.v)
		if len(ids) != 2 || ids[0] == ids[1] {
			t.Fatalf("%s: results %v", c.tg.Model, ids)
		}
		for k, id := range ids {
			if !c.re.MatchString(id) {
				t.Errorf("%s: id %q breaks %s", c.tg.Model, id, c.re)
			}
			if r1.report.Remapped[k].To != id {
				t.Errorf("%s: result %d uses %q, mapping says %q", c.tg.Model, k, id, r1.report.Remapped[k].To)
			}
		}
	}
}

// loopJournal is a long tool loop: user turns, parallel exchanges, answers.
func loopJournal(n int) *rt.Journal {
	j := (&rt.Journal{}).System("You are a careful assistant.")
	for i := 0; i < n; i++ {
		j.User(fmt.Sprintf("Request %d: check the files.", i))
		s := fmt.Sprintf("s%d", i)
		j.Call(rt.GPT41, s, fmt.Sprintf("c%da", i), "read_file", fmt.Sprintf(`{"path":"/f%d"}`, i)).
			Call(rt.GPT41, s, fmt.Sprintf("c%db", i), "search", `{"q":"x"}`).
			Result(fmt.Sprintf("c%db", i), "search", strings.Repeat("hit ", 20)).
			Result(fmt.Sprintf("c%da", i), "read_file", strings.Repeat("line of code\n", 30))
		j.Say(rt.GPT41, s+"x", fmt.Sprintf("Answer %d.", i))
	}
	return j
}

func TestAcceptance12_TrimNeverSplitsAnExchange(t *testing.T) {
	j := loopJournal(12)
	tools := rt.ToolSet("read_file", "search")
	for _, base := range []render.Target{chatGPT41, claude, gemini3} {
		full := mustRender(t, j.Events(), withTools(base, tools...)).report.Tokens.Estimated
		prevKept := -1
		for pct := 10; pct <= 100; pct += 5 {
			tg := withTools(base, tools...)
			tg.Window = full * pct / 100
			r := mustRender(t, j.Events(), tg)
			e := r.report.Tokens
			if e.OverBudget || e.Estimated > tg.Window {
				t.Errorf("%s at %d%%: estimate %d, window %d, over %v", base.API, pct, e.Estimated, tg.Window, e.OverBudget)
			}
			ids, _ := resultsOf(base.API, r.v)
			if len(ids)%2 != 0 {
				t.Errorf("%s at %d%%: %d results: an exchange was split", base.API, pct, len(ids))
			}
			if r.report.KeptUnits < prevKept {
				t.Errorf("%s at %d%%: kept %d units, fewer than at a smaller window (%d)", base.API, pct, r.report.KeptUnits, prevKept)
			}
			prevKept = r.report.KeptUnits
			if r.report.KeptUnits+r.report.DroppedUnits != 3*12 {
				t.Errorf("%s at %d%%: kept %d + dropped %d units", base.API, pct, r.report.KeptUnits, r.report.DroppedUnits)
			}
		}
		if prevKept != 3*12 {
			t.Errorf("%s: the full window kept %d units", base.API, prevKept)
		}
	}
}

func TestAcceptance13_TrimDigest(t *testing.T) {
	j := loopJournal(8)
	tg := withTools(chatGPT41, rt.ToolSet("read_file", "search")...)
	tg.Window = 900
	r := mustRender(t, j.Events(), tg)
	if r.report.DroppedUnits == 0 {
		t.Fatal("the window dropped nothing")
	}
	m := obj(at(r.v["messages"], 1)) // after the system instruction
	text := str(m["content"])
	if str(m["role"]) != "user" || text != r.report.Digest {
		t.Fatalf("first non-instruction message is %s, want the digest", compact(m))
	}
	want := fmt.Sprintf("[Context note: %d earlier journal events were omitted", r.report.DroppedEvents)
	if !strings.HasPrefix(text, want) || !strings.Contains(text, "read_file, search") || !strings.Contains(text, "Last omitted user request: \"Request") {
		t.Errorf("digest = %q", text)
	}
	again := mustRender(t, j.Events(), tg)
	if again.report.Digest != text || !bytes.Equal(again.body, r.body) {
		t.Error("the same journal and window gave another digest")
	}
}

func TestAcceptance14_TrimStartRule(t *testing.T) {
	// Steps only after the first user turn: any cut lands on a step.
	j := (&rt.Journal{}).User("Work through the list.")
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("c%d", i)
		j.Exchange(rt.GPT41, fmt.Sprintf("s%d", i), id, "read_file", `{"path":"/x"}`, strings.Repeat("data ", 40))
	}
	for _, base := range []render.Target{claude, gemini3} {
		tg := withTools(base, rt.ToolSet("read_file")...)
		tg.Window = 700
		r := mustRender(t, j.Events(), tg)
		if r.report.DroppedUnits == 0 {
			t.Fatalf("%s: nothing dropped", base.API)
		}
		key := "messages"
		if base.API == render.Gemini {
			key = "contents"
		}
		first := obj(at(r.v[key], 0))
		if str(first["role"]) != "user" || !strings.Contains(compact(first), "[Context note:") {
			t.Errorf("%s: the window starts with %s, want the user digest", base.API, compact(first))
		}
	}
	// Nothing dropped, and the journal opens with the assistant.
	k := (&rt.Journal{}).Say(rt.GPT41, "s0", "Hello, how can I help?").User("Hi.")
	for _, tg := range []render.Target{claude, gemini3} {
		r := mustRender(t, k.Events(), tg)
		if !has(r.body, render.StartText) {
			t.Errorf("%s: no user turn before the opening assistant message: %s", tg.API, r.body)
		}
	}
}

func TestAcceptance15_OversizedLastExchange(t *testing.T) {
	huge := strings.Repeat("a very long log line that goes on\n", 5000)
	j := (&rt.Journal{}).User("Read the log.").Call(rt.GPT41, "s1", "c1", "read_file", `{"path":"/log"}`).Result("c1", "read_file", huge)
	for _, base := range allTargets {
		tg := withTools(base, rt.ToolSet("read_file")...)
		tg.Window = 2000
		r := mustRender(t, j.Events(), tg)
		ids, _ := resultsOf(base.API, r.v)
		if len(ids) != 1 {
			t.Fatalf("%s: the call lost its result: %s", base.API, ids)
		}
		if !has(r.body, "[truncated to fit the context window:") || len(r.report.Truncated) != 1 {
			t.Errorf("%s: no truncation marker or report (%v)", base.API, r.report.Truncated)
		}
		if e := r.report.Tokens; e.Estimated > tg.Window || e.OverBudget {
			t.Errorf("%s: estimate %d over window %d", base.API, e.Estimated, tg.Window)
		}
	}
}

func TestAcceptance16_InstructionsPlacement(t *testing.T) {
	j := (&rt.Journal{}).System("Be terse.").User("Hi").Say(rt.GPT41, "s1", "Hello.").
		Developer("From now on answer in French.").User("How are you?")
	c := mustRender(t, j.Events(), chatGPT41)
	if d := cmp.Diff([]string{"system", "user", "assistant", "system", "user"}, roles(c.v["messages"])); d != "" {
		t.Errorf("chat (-want +got):\n%s", d)
	}
	o3 := mustRender(t, j.Events(), render.Target{API: render.OpenAIChat, Model: "o3"})
	if d := cmp.Diff([]string{"developer", "user", "assistant", "developer", "user"}, roles(o3.v["messages"])); d != "" {
		t.Errorf("chat o3 (-want +got):\n%s", d)
	}
	r := mustRender(t, j.Events(), respGPT5)
	if str(r.v["instructions"]) != "Be terse." || str(obj(at(r.v["input"], 2))["role"]) != "developer" {
		t.Errorf("responses: %s", r.body)
	}
	a := mustRender(t, j.Events(), claude)
	if str(obj(at(a.v["system"], 0))["text"]) != "Be terse." || has(a.body, `"role":"system"`) {
		t.Errorf("anthropic: %s", a.body)
	}
	if !strings.Contains(compact(at(a.v["messages"], 2)), "French") || str(obj(at(a.v["messages"], 2))["role"]) != "user" {
		t.Errorf("anthropic: the mid instruction should be user-side text: %s", a.body)
	}
	// Models flagged MidSystem get the same form: the Messages API
	// refuses role "system" inside messages.
	for _, tg := range []render.Target{claudeMid, claudeOpus} {
		m := mustRender(t, j.Events(), tg)
		if d := cmp.Diff([]string{"user", "assistant", "user"}, roles(m.v["messages"])); d != "" || has(m.body, `"role":"system"`) {
			t.Errorf("anthropic %s, flagged mid-conversation system (-want +got):\n%s", tg.Model, d)
		}
		if !strings.Contains(compact(at(m.v["messages"], 2)), "[System instruction]\\nFrom now on answer in French.") {
			t.Errorf("anthropic %s: the mid instruction should be user-side text: %s", tg.Model, m.body)
		}
	}
	g := mustRender(t, j.Events(), gemini3)
	if !strings.Contains(compact(g.v["systemInstruction"]), "Be terse.") || !strings.Contains(compact(at(g.v["contents"], 2)), "French") {
		t.Errorf("gemini: %s", g.body)
	}
}

func TestAcceptance17_Determinism(t *testing.T) {
	j := loopJournal(20)
	claudeLoop(j, 1, "a1")
	for _, base := range append(allTargets, claudeOpus) {
		tg := withTools(base, rt.ToolSet("read_file", "search")...)
		tg.Window = 3000
		want, _, err := wire.Render(j.Events(), tg)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		bodies := make([][]byte, 100)
		for i := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				bodies[i], _, _ = wire.Render(j.Events(), tg)
			}()
		}
		wg.Wait()
		for i, b := range bodies {
			if !bytes.Equal(b, want) {
				t.Fatalf("%s: render %d differs", base.API, i)
			}
		}
	}
}

func TestAcceptance18_StatelessResponsesReplay(t *testing.T) {
	j := (&rt.Journal{}).User("Weather?")
	gptStep(j, "g1", "call_1")
	j.Reason(journal.Reasoning{Producer: rt.GPT5, Step: "g2", ItemID: "rs_g2", Encrypted: "ENC-g2", Summary: []string{"Thought about it."}})
	j.Add(journal.KindAssistant, journal.AssistantMessage{Text: "20C.", Producer: rt.GPT5, Step: "g2", ItemID: "msg_g2"})
	j.User("And tomorrow?")
	r := mustRender(t, j.Events(), withTools(respGPT5, weatherTool))
	if !strings.Contains(compact(r.v["include"]), "reasoning.encrypted_content") {
		t.Errorf("include = %v", r.v["include"])
	}
	items := list(r.v["input"])
	n := 0
	for i, x := range items {
		it := obj(x)
		if str(it["type"]) != "reasoning" {
			continue
		}
		n++
		if _, ok := it["summary"]; !ok || str(it["encrypted_content"]) == "" {
			t.Errorf("reasoning item %d: %s", i, compact(it))
		}
		next := obj(items[i+1])
		if typ := str(next["type"]); typ != "function_call" && typ != "message" {
			t.Errorf("reasoning item %d is followed by %s", i, compact(next))
		}
		if next["id"] == nil {
			t.Errorf("the item after reasoning %d lost its ID", i)
		}
	}
	if n != 2 || r.report.ReasoningKept != 2 {
		t.Errorf("%d reasoning items, report kept %d", n, r.report.ReasoningKept)
	}
}

func TestAcceptance19_ArgumentEncoding(t *testing.T) {
	args := `{"city":"Paris","n":1.50,"big":12345678901234567890}`
	bad := `{"city": "Par`
	j := (&rt.Journal{}).User("Go.").Call(rt.Claude, "s1", "c1", "get_weather", args).
		CallWith(journal.ToolCall{CallID: "c2", Name: "get_weather", RawArguments: bad, Producer: rt.Claude, Step: "s1"}).
		Result("c1", "", "ok").Result("c2", "", "ok")
	wantObj := map[render.API]string{}
	for _, tg := range allTargets {
		r := mustRender(t, j.Events(), withTools(tg, weatherTool))
		var got []any
		switch tg.API {
		case render.OpenAIChat:
			for _, c := range list(obj(at(r.v["messages"], 1))["tool_calls"]) {
				got = append(got, obj(obj(c)["function"])["arguments"])
			}
		case render.OpenAIResponses:
			got = []any{obj(at(r.v["input"], 1))["arguments"], obj(at(r.v["input"], 2))["arguments"]}
		case render.Anthropic:
			for _, b := range list(obj(at(r.v["messages"], 1))["content"]) {
				got = append(got, obj(b)["input"])
			}
		case render.Gemini:
			for _, p := range list(obj(at(r.v["contents"], 1))["parts"]) {
				got = append(got, obj(obj(p)["functionCall"])["args"])
			}
		case render.Ollama:
			for _, c := range list(obj(at(r.v["messages"], 1))["tool_calls"]) {
				got = append(got, obj(obj(c)["function"])["arguments"])
			}
		}
		if len(got) != 2 {
			t.Fatalf("%s: %d calls", tg.API, len(got))
		}
		if tg.API == render.OpenAIChat || tg.API == render.OpenAIResponses {
			// Invalid JSON goes wrapped: a strict server refuses an
			// arguments string that is not a JSON-encoded object.
			if got[0] != args || got[1] != `{"_raw":"{\"city\": \"Par"}` {
				t.Errorf("%s: arguments %q, want the journal's object and the wrapped invalid text", tg.API, got)
			}
			continue
		}
		if obj(got[0]) == nil || str(obj(got[1])["_raw"]) != bad {
			t.Errorf("%s: arguments %s, want objects with the {\"_raw\"} fallback", tg.API, compact(got))
		}
		if !has(r.body, `12345678901234567890`) || !has(r.body, `1.50`) {
			t.Errorf("%s: numbers were reformatted: %s", tg.API, r.body)
		}
		wantObj[tg.API] = compact(got[1])
	}
	if len(wantObj) != 3 {
		t.Errorf("object renderings: %v", wantObj)
	}
}

func TestAcceptance20_ToolDeclarationsAndEmptyContent(t *testing.T) {
	j := (&rt.Journal{}).User("Search.").
		Reason(journal.Reasoning{Producer: rt.GPT5, Step: "g0", ItemID: "rs_only", Encrypted: "ENC-only"}). // a reasoning-only step
		Exchange(rt.GPT41, "s1", "c1", "legacy_search", `{"q":"x"}`, "found").
		Say(rt.GPT41, "s2", "Found it.").User("Thanks.")
	a := mustRender(t, j.Events(), withTools(claude, weatherTool))
	if d := cmp.Diff([]string{"legacy_search"}, a.report.StubbedTools); d != "" {
		t.Errorf("stubbed tools (-want +got):\n%s", d)
	}
	for i, m := range list(a.v["messages"]) {
		if len(list(obj(m)["content"])) == 0 {
			t.Errorf("message %d is empty", i)
		}
		for _, b := range list(obj(m)["content"]) {
			if typ := str(obj(b)["type"]); (typ == "text" && str(obj(b)["text"]) == "") || typ == "thinking" {
				t.Errorf("message %d has an empty or foreign block %s", i, compact(b))
			}
		}
	}
	// Same-model replay where the server needs it inside a tool loop.
	q := (&rt.Journal{}).User("Read it.").Think(rt.Qwen, "q1", "I should read the file.", "").
		Exchange(rt.Qwen, "q1", "c1", "read_file", `{"path":"/a"}`, "content")
	o := mustRender(t, q.Events(), withTools(ollamaQwen, rt.ToolSet("read_file")...))
	if got := str(obj(at(o.v["messages"], 1))["thinking"]); got != "I should read the file." {
		t.Errorf("ollama: thinking = %q", got)
	}
	d := (&rt.Journal{}).User("Read it.").Think(rt.DeepSeek, "d1", "Reading.", "").
		Exchange(rt.DeepSeek, "d1", "c1", "read_file", `{"path":"/a"}`, "content")
	ds := render.Target{API: render.OpenAIChat, Provider: "deepseek", Model: "deepseek-reasoner", Tools: rt.ToolSet("read_file")}
	r := mustRender(t, d.Events(), ds)
	if got := str(obj(at(r.v["messages"], 1))["reasoning_content"]); got != "Reading." {
		t.Errorf("deepseek: reasoning_content = %q", got)
	}
}
