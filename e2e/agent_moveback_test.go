package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
)

// TestAgentMoveBackAfterWriteInPrecopy: the agent writes a workspace file
// while a move's pre-copy is under way (the link to the target is slowed,
// the task is sent after the move began), the move commits, the agent
// moves on to a third node and then back to the first. The first node
// kept its last workspace as the shadow of a move back; the move back,
// without any fault, must commit. (Found by TestChaosRingAgent: the
// target answers the pre-copy as if its store held the blob of the file
// written during the first move's pre-copy, and then refuses the prepare:
// "verify_failed: blob ... of the snapshot is missing".)
func TestAgentMoveBackAfterWriteInPrecopy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real node processes; skipped with -short")
	}
	s := startSim(t)
	c := newClusterArgs(t, 3, []string{"--model-endpoint", s.url})
	n1, n2, n3 := c.procs[0], c.procs[1], c.procs[2]
	id := c.createLLMAgent(n1, smallWorkspace(t), claudePlanner, "Please read_file path=src/main.go.")
	c.waitAnswers(n1, id, 1)
	move := func(from, to *proc) api.MoveResult {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := c.move(ctx, from, id, to)
		if err != nil {
			t.Fatalf("move %s -> %s: %v", from.name, to.name, err)
		}
		return res
	}
	c.proxy[0][1].SetLatency(150 * time.Millisecond)
	first := make(chan api.MoveResult, 1)
	go func() { first <- move(n1, n2) }()
	time.Sleep(50 * time.Millisecond) // the pre-copy is on its way; not a check
	c.say(n1, id, "Please write_file path=notes/late.txt content=written-in-precopy.")
	if res := <-first; res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move n1 -> n2: %s %s", res.Outcome, res.Reason)
	}
	c.proxy[0][1].SetLatency(0)
	c.waitAnswers(n2, id, 2)
	if res := move(n2, n3); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move n2 -> n3: %s %s", res.Outcome, res.Reason)
	}
	c.waitAnswers(n3, id, 2)
	if res := move(n3, n1); res.Outcome != api.OutcomeCommitted {
		t.Errorf("move back n3 -> n1 without faults: %s %s", res.Outcome, res.Reason)
	}
	holder := c.settle(id)
	c.afterRun(c.procs[holder], id, s)
}
