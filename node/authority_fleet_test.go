package node

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/authority"
)

// lossyAuthority applies every swap to its inner Authority but loses the
// reply of the ones a test marks: the caller gets an unknown outcome for a
// write that committed (PROTOCOL §12 F3).
type lossyAuthority struct {
	authority.Authority
	mu   sync.Mutex
	lose int // replies still to lose
	lost int
}

func (l *lossyAuthority) CompareAndSwap(ctx context.Context, agent string, expect authority.Entry, next authority.Holding) (authority.Entry, error) {
	e, err := l.Authority.CompareAndSwap(ctx, agent, expect, next)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.lose > 0 {
		l.lose--
		l.lost++
		return authority.Entry{}, &authority.UnknownOutcomeError{Agent: agent, Next: next, Err: fmt.Errorf("injected: reply lost")}
	}
	return e, err
}

func (l *lossyAuthority) lostReplies() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// TestFleetMoveSurvivesEveryLostCall is the fault matrix of the move in
// fleet mode (PROTOCOL §10, §12): both nodes keep the agent's key in one
// authority, one named call is lost, and the key must name the node that
// runs the agent afterwards.
func TestFleetMoveSurvivesEveryLostCall(t *testing.T) {
	for _, c := range []struct {
		call  string
		after bool
		times int
		want  string
	}{
		{"offer", false, -1, api.OutcomeRolledBack},
		{"prepare", true, 1, api.OutcomeCommitted},
		{"prepare", false, -1, api.OutcomeRolledBack},
		{"activate", false, 1, api.OutcomeRolledBack}, // the source burns the epoch
		{"activate", true, 1, api.OutcomeCommitted},   // the source reads the commit
		{"activate", false, -1, api.OutcomeRolledBack},
		{"abort", false, 3, api.OutcomeRolledBack},
	} {
		name := fmt.Sprintf("%s/%s/%d", c.call, map[bool]string{false: "request-lost", true: "reply-lost"}[c.after], c.times)
		t.Run(name, func(t *testing.T) {
			keys := authority.NewMem()
			cl, f := fleetCluster(t, FleetAuthority{A: keys}, FleetAuthority{A: keys})
			a, b := cl.nodes[0], cl.nodes[1]
			id := fleetAgent(t, keys, a)
			f.set(c.call, c.after, c.times)
			if c.call == "abort" {
				f.set("prepare", false, -1)
			}
			res := move(t, a, b, id)
			if res.Outcome != c.want {
				t.Fatalf("outcome %s (%s), want %s", res.Outcome, res.Reason, c.want)
			}
			f.heal()
			holder := a
			if c.want == api.OutcomeCommitted {
				holder = b
			}
			checkFleetHolder(t, cl, keys, holder, id)
		})
	}
}

// TestFleetLostAuthorityReplies: the authority commits but its reply is
// lost, to the target's activation (it reads the key and goes on) and to
// the source's burn (it reads its own burn and resumes).
func TestFleetLostAuthorityReplies(t *testing.T) {
	t.Run("activation", func(t *testing.T) {
		keys := authority.NewMem()
		lossy := &lossyAuthority{Authority: keys, lose: 1}
		cl, _ := fleetCluster(t, FleetAuthority{A: keys}, FleetAuthority{A: lossy})
		a, b := cl.nodes[0], cl.nodes[1]
		id := fleetAgent(t, keys, a)
		if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
			t.Fatalf("outcome %s (%s), want committed", res.Outcome, res.Reason)
		}
		if n := lossy.lostReplies(); n != 1 {
			t.Fatalf("%d replies lost, want 1", n)
		}
		checkFleetHolder(t, cl, keys, b, id)
	})
	t.Run("burn", func(t *testing.T) {
		keys := authority.NewMem()
		lossy := &lossyAuthority{Authority: keys, lose: 1}
		cl, f := fleetCluster(t, FleetAuthority{A: lossy}, FleetAuthority{A: keys})
		a, b := cl.nodes[0], cl.nodes[1]
		id := fleetAgent(t, keys, a)
		f.set("activate", false, -1)
		f.set("resolve", false, -1)
		if res := move(t, a, b, id); res.Outcome != api.OutcomeRolledBack {
			t.Fatalf("outcome %s (%s), want rolled_back", res.Outcome, res.Reason)
		}
		if n := lossy.lostReplies(); n != 1 {
			t.Fatalf("%d replies lost, want 1", n)
		}
		f.heal()
		checkFleetHolder(t, cl, keys, a, id)
	})
}

// fleetCluster starts a source (calls to its peers go through faults) and
// a target with the given authorities.
func fleetCluster(t *testing.T, src, dst Authority) (*cluster, *faults) {
	f := &faults{}
	wrap := func(peer ID, rt http.RoundTripper) http.RoundTripper { return faultTransport{next: rt, f: f} }
	return newCluster(t, nodeOpts{authority: src, wrap: wrap}, nodeOpts{authority: dst}), f
}

// fleetAgent creates a running agent on n and its key (nothing in the
// node creates keys yet).
func fleetAgent(t *testing.T, keys authority.Authority, n *Node) string {
	id := createAgent(t, n, "")
	if _, err := authority.Create(context.Background(), keys, id, string(n.ID())); err != nil {
		t.Fatal(err)
	}
	return id
}

// checkFleetHolder checks that holder runs the agent alone, keeps no
// staging elsewhere, and that the key names it.
func checkFleetHolder(t *testing.T, cl *cluster, keys authority.Authority, holder *Node, id string) {
	t.Helper()
	waitSteps(t, holder, id, 3)
	waitNoStaging(t, cl, holder, id)
	cl.checkHolder(holder, id)
	key, err := keys.Get(context.Background(), id)
	if err != nil || key.Node != string(holder.ID()) {
		t.Fatalf("key = %v, %v; want it to name the holder %s", key.Holding, err, holder.ID())
	}
}
