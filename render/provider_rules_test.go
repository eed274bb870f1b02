package render_test

// Request bodies providers refused (issue 10, items 18 to 24). Each test
// renders through mustRender, so its body passes the provider's
// validator in package rendertest, which carries the rule it pins.

import (
	"testing"

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
