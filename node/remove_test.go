package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/google/go-cmp/cmp"
)

func entriesOf(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// `capsule agent rm` removes a retired copy and its caches, keeps the
// records that fence later moves, and hides the agent until a move brings
// it back; it is refused where the node holds the agent (issue 10 item 6).
func TestRemoveRetiredCopy(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := c.nodes[0], c.nodes[1]
	id := createAgent(t, a, "")
	ctx := context.Background()
	if err := a.RemoveAgent(ctx, id); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "running") {
		t.Errorf("rm of a running agent: %v, want a conflict saying it runs", err)
	}
	if _, err := a.StopAgent(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := a.RemoveAgent(ctx, id); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "holds it") {
		t.Errorf("rm of a stopped agent this node holds: %v, want a conflict", err)
	}
	if _, err := a.StartAgent(ctx, id); err != nil {
		t.Fatal(err)
	}
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move A -> B: %+v", res)
	}
	waitSteps(t, b, id, 3)
	if st := agentStatus(t, a, id); st.State != api.StateRetired {
		t.Fatalf("A's status after the move: %q, want retired", st.State)
	}

	if err := a.RemoveAgent(ctx, id); err != nil {
		t.Fatalf("rm of the retired copy: %v", err)
	}
	dir := filepath.Join(a.cfg.Dir, "agents", id)
	if diff := cmp.Diff([]string{record.MetaFile, record.HolderFile, record.SourceFile}, entriesOf(t, dir)); diff != "" {
		t.Errorf("left in the agent's folder after rm (-want +got):\n%s", diff)
	}
	list, err := a.Agents(ctx)
	if err != nil || len(list) != 0 {
		t.Errorf("agent list after rm: %+v, %v; want empty", list, err)
	}
	if _, err := a.Agent(ctx, id); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("status after rm: %v, want not found", err)
	}
	if err := a.RemoveAgent(ctx, id); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("second rm: %v, want not found", err)
	}

	// The records stayed: the agent comes back at an epoch above every one
	// this node saw, and is listed again.
	if res := move(t, b, a, id); res.Outcome != api.OutcomeCommitted || res.Epoch != 3 {
		t.Fatalf("move B -> A after rm: %+v", res)
	}
	waitSteps(t, a, id, 3)
	c.checkHolder(a, id)
	if _, err := a.Agent(ctx, id); err != nil {
		t.Errorf("status after the agent came back: %v", err)
	}
}

// rm is refused while an incoming move is pending on the node, and while
// the node's own move of the agent is unresolved.
func TestRemoveRefusedMidMove(t *testing.T) {
	f := &faults{}
	c := newCluster(t, nodeOpts{}, faultyNode(f))
	a, b := c.nodes[0], c.nodes[1]
	id := createAgent(t, a, "")
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move A -> B: %+v", res)
	}
	waitSteps(t, b, id, 3)
	f.set("activate", false, -1)
	f.set("resolve", false, -1)
	if res := moveWithin(t, b, a, id, 10*time.Second); res.Outcome != api.OutcomeWaiting {
		t.Fatalf("move B -> A with activate and resolve lost: %+v, want waiting", res)
	}
	ctx := context.Background()
	if err := a.RemoveAgent(ctx, id); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "incoming move") {
		t.Errorf("rm on the target of a pending move: %v, want a conflict", err)
	}
	if err := b.RemoveAgent(ctx, id); !errors.Is(err, api.ErrConflict) {
		t.Errorf("rm on the source of an unresolved move: %v, want a conflict", err)
	}
	f.heal()

	// The move back is resolved aborted: B runs the agent again, and A,
	// which has seen epoch 3 since it retired the agent, still names B as
	// holder and successor (the first leg is not history: A holds nothing).
	waitSteps(t, b, id, 3)
	deadline := time.Now().Add(10 * time.Second)
	for a.agentPending(id) {
		if time.Now().After(deadline) {
			t.Fatalf("A keeps the aborted incoming move: %+v", agentStatus(t, a, id))
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := statusView{State: api.StateRetired, Holder: string(b.ID()), Successor: string(b.ID()), Epoch: 3, Move: true}
	if diff := cmp.Diff(want, viewOf(agentStatus(t, a, id))); diff != "" {
		t.Errorf("A's status after the aborted move back (-want +got):\n%s", diff)
	}
	if err := a.RemoveAgent(ctx, id); err != nil {
		t.Errorf("rm once the move back was aborted: %v", err)
	}
}

// agentPending reports whether n's target of agent id has a pending move.
func (n *Node) agentPending(id string) bool {
	a, err := n.getTenant(id)
	if err != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.holder.Pending() != nil || a.tgt.in != nil
}
