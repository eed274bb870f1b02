package node

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/vfs"
)

// checkStaysStopped checks that n holds the agent, does not run it, and
// keeps the operator's intent "stopped" (the state string is the status
// derivation's business; here the runner itself is checked).
func checkStaysStopped(t *testing.T, n *Node, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ag, err := n.getTenant(id)
		if err == nil {
			ag.mu.Lock()
			held, running, intent := ag.holder.Holder() > 0 && exists(n.fsys, ag.capsule()), ag.run != nil, ag.meta.Run
			ag.mu.Unlock()
			if held && !running && !intent {
				break
			}
			if running {
				t.Fatalf("a stopped agent runs on %s", n.ID().Short())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent %s on %s: not held stopped (%v)", id, n.ID().Short(), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	before, _ := n.Agent(context.Background(), id)
	time.Sleep(50 * time.Millisecond) // ten runner steps
	if after, _ := n.Agent(context.Background(), id); after.State == api.StateRunning || after.Steps != before.Steps {
		t.Fatalf("a stopped agent ran on %s: %+v then %+v", n.ID().Short(), before, after)
	}
}

// TestStoppedAgentStaysStoppedWhenMoved: the operator's intent travels
// with the agent (issue 10 item 3; PROTOCOL §4, `stopped`): an agent
// created stopped, or stopped before or while it moves, is stopped on the
// target, and stays so across restarts of both nodes; a running agent
// runs there.
func TestStoppedAgentStaysStoppedWhenMoved(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	c := &cluster{t: t, nodes: []*Node{newNode(t, dirs[0], nodeOpts{}), newNode(t, dirs[1], nodeOpts{})}}
	c.link()
	a, b := c.nodes[0], c.nodes[1]
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "t", Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	id := st.ID
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move a->b: %+v", res)
	}
	checkStaysStopped(t, b, id)
	restartNode(t, c, 1, dirs[1], nodeOpts{})
	restartNode(t, c, 0, dirs[0], nodeOpts{})
	a, b = c.nodes[0], c.nodes[1]
	checkStaysStopped(t, b, id)

	// Started there, it runs when it moves back.
	if _, err := b.StartAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	waitSteps(t, b, id, 3)
	if res := move(t, b, a, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move b->a: %+v", res)
	}
	waitSteps(t, a, id, 3)

	// Stopped while pre-copy runs, just before the freeze: the intent at
	// the time the prepare and activate leave is the one that travels.
	a.hooks.beforeFreeze = func(agent string) {
		if _, err := a.StopAgent(context.Background(), agent); err != nil {
			t.Error(err)
		}
	}
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move a->b again: %+v", res)
	}
	checkStaysStopped(t, b, id)
	checkNoUnreferenced(t, b, id) // the committed move was pruned although nothing runs
	restartNode(t, c, 1, dirs[1], nodeOpts{})
	checkStaysStopped(t, c.nodes[1], id)
	if _, err := c.nodes[1].StartAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	waitSteps(t, c.nodes[1], id, 3)
	c.checkHolder(c.nodes[1], id)
}

// checkNoUnreferenced waits until the capsule n hosts verifies with no
// unreferenced-blob warning (the new holder prunes after a move commits).
func checkNoUnreferenced(t *testing.T, n *Node, id string) {
	t.Helper()
	ag, err := n.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := capsule.Verify(vfs.OS{}, ag.capsule(), capsule.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Problems) == 0 && len(unreferenced(r)) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the capsule on %s has problems %v and unreferenced blobs %v", n.ID().Short(), r.Problems, unreferenced(r))
		}
	}
}
