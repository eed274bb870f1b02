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
