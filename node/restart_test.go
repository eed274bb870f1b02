package node

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
)

// Regression cases found by the real-process chaos test (e2e): restarts
// that used to leave an agent that could never run or move again.

// restartNode closes n and starts a node on the same data folder and address.
func restartNode(t *testing.T, c *cluster, i int, dir string, o nodeOpts) {
	t.Helper()
	addr := c.nodes[i].Addr()
	if err := c.nodes[i].Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := newNodeAt(t, dir, addr, o)
	c.nodes[i] = n
}

// TestRestartAfterAgentCameBack moves an agent away and back, then restarts
// the node that holds it again. Its source.json still records the first
// move (committed, the agent retired); replaying that record used to retire
// the live capsule and leave the agent frozen for good (e2e seeds 3, 21, 22).
func TestRestartAfterAgentCameBack(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	c := &cluster{t: t, nodes: []*Node{newNode(t, dirs[0], nodeOpts{}), newNode(t, dirs[1], nodeOpts{})}}
	c.link()
	a, b := c.nodes[0], c.nodes[1]
	id := createAgent(t, a, "")
	if res := move(t, a, b, id); res.Outcome != "committed" {
		t.Fatalf("move a->b: %+v", res)
	}
	waitSteps(t, b, id, 3)
	if res := move(t, b, a, id); res.Outcome != "committed" {
		t.Fatalf("move b->a: %+v", res)
	}
	waitSteps(t, a, id, 3)
	restartNode(t, c, 0, dirs[0], nodeOpts{})
	waitSteps(t, c.nodes[0], id, 3)
	c.checkHolder(c.nodes[0], id)
}

// TestRestartAfterPrecopyOnly restarts a target that received pre-copied
// blobs but never an offer (every offer lost): it has an agent folder with
// no holder record, which used to block the agent there for good (e2e seeds
// 5, 12). A later move to it must commit.
func TestRestartAfterPrecopyOnly(t *testing.T) {
	f := &faults{}
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	c := &cluster{t: t, nodes: []*Node{newNode(t, dirs[0], faultyNode(f)), newNode(t, dirs[1], nodeOpts{})}}
	c.link()
	a := c.nodes[0]
	id := createAgent(t, a, "")
	f.set("offer", false, -1)
	f.set("abort", false, -1)
	if res := move(t, a, c.nodes[1], id); res.Outcome == "committed" {
		t.Fatalf("move with every offer lost committed: %+v", res)
	}
	restartNode(t, c, 1, dirs[1], nodeOpts{})
	f.heal()
	waitSteps(t, a, id, 3)
	// The source retries its abort until the target answers; only then
	// does it start a new move.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := a.Move(ctx, id, api.MoveRequest{To: string(c.nodes[1].ID())}, nil)
		cancel()
		if err == nil && res.Outcome == "committed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("move after the target restarted: %+v, %v", res, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitSteps(t, c.nodes[1], id, 3)
	c.checkHolder(c.nodes[1], id)
}
