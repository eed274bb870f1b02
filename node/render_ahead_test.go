package node

import (
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
)

// TestPrepareTakesOverTheRenderAhead checks that a target renders the
// journal of a move once: the render started when the journal tail
// arrived is the one the prepare reports, not a second render of the same
// journal inside the frozen window.
func TestPrepareTakesOverTheRenderAhead(t *testing.T) {
	cl := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := cl.nodes[0], cl.nodes[1]
	var mu sync.Mutex
	sizes := map[int]int{} // events rendered -> renders of that many events
	b.hooks.render = func(events []journal.Event, tg render.Target) ([]byte, *render.Report, error) {
		mu.Lock()
		sizes[len(events)]++
		mu.Unlock()
		return wire.Render(events, tg)
	}
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: &api.ModelRef{Provider: "ollama", API: "chat", Model: "llama3.2"}})
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, a, st.ID, 3)
	res := move(t, a, b, st.ID)
	if res.Outcome != api.OutcomeCommitted || res.Render == nil || res.Render.Bytes == 0 {
		t.Fatalf("move: %+v, render %+v", res, res.Render)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := sizes[res.Render.Events]; got != 1 {
		t.Errorf("the staged journal of %d events was rendered %d times (all renders by size: %v), want once", res.Render.Events, got, sizes)
	}
}

// TestTakeAheadNeedsTheSameJournal checks that a render ahead is taken
// over only for exactly the journal it rendered, and is forgotten either
// way.
func TestTakeAheadNeedsTheSameJournal(t *testing.T) {
	k := journalKey{events: 10, bytes: 1000, digest: "sha256:aa"}
	for _, c := range []struct {
		name string
		key  journalKey
		want bool
	}{
		{"same journal", k, true},
		{"more events", journalKey{events: 11, bytes: 1100, digest: "sha256:bb"}, false},
		{"same count, other bytes", journalKey{events: 10, bytes: 999, digest: "sha256:aa"}, false},
		{"same size, other digest", journalKey{events: 10, bytes: 1000, digest: "sha256:cc"}, false},
	} {
		r := &aheadRender{key: k, done: make(chan struct{})}
		a := &tenant{tgt: &targetSide{ahead: r}}
		if got := a.takeAhead(c.key); (got == r) != c.want || a.tgt.ahead != nil {
			t.Errorf("%s: takeAhead = %v (want taken %v), left %v", c.name, got, c.want, a.tgt.ahead)
		}
	}
}
