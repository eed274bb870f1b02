package node

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
)

// abandonedTarget rolls a move of a new agent from A to B back after B
// prepared it, with every abort to B lost: to A, B died with the move
// staged.
func abandonedTarget(t *testing.T, abortRetries int) (cl *cluster, id string) {
	t.Helper()
	f := &faults{}
	dead := &atomic.Value{} // B's ID, once known: only calls to B fail
	dead.Store(ID(""))
	opts := nodeOpts{abortRetries: abortRetries, wrap: func(peer ID, rt http.RoundTripper) http.RoundTripper {
		return onlyTo{peer: peer, dead: dead, faulty: faultTransport{next: rt, f: f}, next: rt}
	}}
	cl = newCluster(t, opts, nodeOpts{}, nodeOpts{})
	a, b := cl.nodes[0], cl.nodes[1]
	dead.Store(b.ID())
	id = createAgent(t, a, "")
	f.set("prepare", true, -1) // B prepares; A never hears it
	f.set("abort", false, -1)  // and B never hears the abort
	if res := move(t, a, b, id); res.Outcome != api.OutcomeRolledBack {
		t.Fatalf("move A -> B: %+v, want rolled back", res)
	}
	waitSteps(t, a, id, 3)
	bag, err := b.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	bag.mu.Lock()
	pending := bag.holder.Pending()
	bag.mu.Unlock()
	if pending == nil {
		t.Fatal("B keeps no pending move: the abandoned staging this test needs is missing")
	}
	return cl, id
}

// onlyTo sends requests to the peer named by dead through faulty, others through
// next.
type onlyTo struct {
	peer         ID
	dead         *atomic.Value // an ID
	faulty, next http.RoundTripper
}

func (o onlyTo) RoundTrip(r *http.Request) (*http.Response, error) {
	if o.peer == o.dead.Load().(ID) {
		return o.faulty.RoundTrip(r)
	}
	return o.next.RoundTrip(r)
}

// startWithin starts a move of id from a to to, retrying while an earlier
// move is still in progress, for at most d.
func startWithin(t *testing.T, from, to *Node, id string, d time.Duration) *moveRun {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		mr, err := from.startMove(id, to.ID())
		if err == nil {
			return mr
		}
		if !errors.Is(err, api.ErrConflict) || time.Now().After(deadline) {
			t.Fatalf("move to %s: %v", to.ID().Short(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Weakness D: once the abort budget runs out (the default is finite) the
// agent moves again, and the dead target discards its abandoned staging
// when a newer offer reaches it.
func TestAbortBudgetEndsThenAgentMovesAgain(t *testing.T) {
	cl, id := abandonedTarget(t, 0)
	a, b, c := cl.nodes[0], cl.nodes[1], cl.nodes[2]
	// 20 attempts, one per 20 ms retry interval.
	mr := startWithin(t, a, c, id, 5*time.Second)
	<-mr.done
	if res := mr.result(id, a.ID()); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move A -> C after the abort budget ran out: %+v", res)
	}
	waitSteps(t, c, id, 3)
	// B comes back: C's offer supersedes the staging A abandoned there.
	if res := move(t, c, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move C -> B: %+v", res)
	}
	waitSteps(t, b, id, 3)
	waitNoStaging(t, cl, b, id)
	cl.checkHolder(b, id)
}

// `capsule move resolve --force` gives the abort up at once.
func TestForceResolveClearsStuckAbort(t *testing.T) {
	cl, id := abandonedTarget(t, 100000)
	a, c := cl.nodes[0], cl.nodes[2]
	if _, err := a.startMove(id, c.ID()); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("move while the abort is retried: err = %v, want a conflict", err)
	}
	// Both views say why the move is refused: the abort is still out.
	if ms, err := a.MoveStatus(t.Context(), id); err != nil || ms.Phase != api.PhaseAborting || ms.Outcome != api.OutcomeRolledBack {
		t.Errorf("move status while the abort is retried: %+v, %v; want phase %s, outcome %s", ms, err, api.PhaseAborting, api.OutcomeRolledBack)
	}
	if as := agentStatus(t, a, id); as.Move == nil || as.Move.Phase != api.PhaseAborting {
		t.Errorf("agent status while the abort is retried: move %+v, want phase %s", as.Move, api.PhaseAborting)
	}
	st, err := a.Resolve(t.Context(), id, api.ResolveRequest{Force: true, By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Outcome != api.OutcomeRolledBack || st.Phase == api.PhaseAborting {
		t.Errorf("resolve --force: %+v, want outcome rolled back, no longer aborting", st)
	}
	mr := startWithin(t, a, c, id, 0)
	<-mr.done
	if res := mr.result(id, a.ID()); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move A -> C after resolve --force: %+v", res)
	}
	waitSteps(t, c, id, 3)
	if res := move(t, c, cl.nodes[1], id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move C -> B: %+v", res)
	}
	waitSteps(t, cl.nodes[1], id, 3)
	waitNoStaging(t, cl, cl.nodes[1], id)
	cl.checkHolder(cl.nodes[1], id)
}
