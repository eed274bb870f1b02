package agent

import (
	"errors"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
)

// A model step renders through Env.Render when it is set; the node's
// wire.Incremental sends the very requests wire.Render would.
func TestStepRendersThroughEnvRender(t *testing.T) {
	bodies := func(withRender bool) ([][]byte, int) {
		b := newBook(t)
		b.add(journal.KindModelChange, sim)
		b.add(journal.KindUser, journal.UserMessage{Text: "find a and b"})
		c := &script{answers: []provider.Response{{Events: []provider.Output{call("c1", "a")}}, {Events: []provider.Output{call("c2", "b")}}, {Events: []provider.Output{text("done")}}}}
		var inc wire.Incremental
		renders := 0
		for i := 0; i < 10; i++ {
			env := envFor(b, c, &box{})
			if withRender {
				env.Render = func(events []journal.Event, tg render.Target) ([]byte, *render.Report, error) {
					renders++
					return inc.Render(events, tg)
				}
			}
			if _, err := Step(t.Context(), env); errors.Is(err, ErrIdle) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		var out [][]byte
		for _, r := range c.got {
			out = append(out, r.Body)
		}
		return out, renders
	}
	want, _ := bodies(false)
	got, renders := bodies(true)
	if renders != 3 || len(got) != 3 {
		t.Fatalf("%d renders through Env.Render, %d requests; want 3 and 3", renders, len(got))
	}
	for i := range want {
		if !bytesEqual(got[i], want[i]) {
			t.Fatalf("request %d differs:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
