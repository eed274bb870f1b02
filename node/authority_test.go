package node

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/authority"
)

// fakeAuthority answers the node's questions as a test tells it and
// records them.
type fakeAuthority struct {
	mu        sync.Mutex
	refuse    error             // Activate's answer
	outcome   authority.Outcome // Settle's answer ("": leave it to resolve)
	activates []string          // "agent source epoch"
	settles   int
}

func (f *fakeAuthority) Activate(_ context.Context, agent, source, _ string, epoch uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.activates = append(f.activates, agent+" "+source)
	return f.refuse
}

func (f *fakeAuthority) Settle(context.Context, string, string, string, uint64) (authority.Outcome, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settles++
	return f.outcome, f.outcome != "", nil
}

// TestAuthorityRefusesActivate: a target whose authority refuses the
// activate (the source burned the epoch, PROTOCOL §12 F5) does not become
// the holder; the source resolves and the agent stays on it.
func TestAuthorityRefusesActivate(t *testing.T) {
	fa := &fakeAuthority{refuse: errors.New("conflict")}
	cl := newCluster(t, nodeOpts{}, nodeOpts{authority: fa})
	a, b := cl.nodes[0], cl.nodes[1]
	id := createAgent(t, a, "")
	res := move(t, a, b, id)
	if res.Outcome != api.OutcomeRolledBack {
		t.Fatalf("outcome %s (%s), want rolled_back", res.Outcome, res.Reason)
	}
	fa.mu.Lock()
	asked := fa.activates
	fa.mu.Unlock()
	if len(asked) == 0 || asked[0] != id+" "+string(a.ID()) {
		t.Fatalf("authority asked %q, want the activate of %s from %s", asked, id, a.ID())
	}
	waitSteps(t, a, id, 3)
	waitNoStaging(t, cl, a, id)
	cl.checkHolder(a, id)
}

// TestAuthoritySettlesLostActivate: with every activate and resolve to the
// target lost, a source whose authority settles the move does not wait for
// the target (§12 F6): burned rolls the move back, committed retires it.
func TestAuthoritySettlesLostActivate(t *testing.T) {
	for _, c := range []struct {
		outcome   authority.Outcome
		afterSent bool // the activate reached the target (its reply was lost)
		want      string
	}{
		{authority.Burned, false, api.OutcomeRolledBack},
		{authority.Committed, true, api.OutcomeCommitted},
	} {
		t.Run(string(c.outcome), func(t *testing.T) {
			f := &faults{}
			fa := &fakeAuthority{outcome: c.outcome}
			src := nodeOpts{authority: fa, wrap: func(peer ID, rt http.RoundTripper) http.RoundTripper { return faultTransport{next: rt, f: f} }}
			cl := newCluster(t, src, nodeOpts{})
			a, b := cl.nodes[0], cl.nodes[1]
			id := createAgent(t, a, "")
			f.set("activate", c.afterSent, -1)
			f.set("resolve", false, -1)
			res := move(t, a, b, id)
			if res.Outcome != c.want {
				t.Fatalf("outcome %s (%s), want %s", res.Outcome, res.Reason, c.want)
			}
			fa.mu.Lock()
			settles := fa.settles
			fa.mu.Unlock()
			if settles == 0 {
				t.Fatal("the authority was never asked to settle")
			}
			f.heal()
			holder := a
			if c.want == api.OutcomeCommitted {
				holder = b
			}
			waitSteps(t, holder, id, 3)
			waitNoStaging(t, cl, holder, id)
			cl.checkHolder(holder, id)
		})
	}
}

// TestFleetTargetGoneAfterActivate: with the agents' keys in a shared
// authority (PROTOCOL §12), a source whose activate and resolves never
// reach the target does not wait for it: it burns the epoch and resumes
// (F6), and the next move commits on the key. With the reply lost instead
// (the target activated), the source reads the commit and retires.
func TestFleetTargetGoneAfterActivate(t *testing.T) {
	for _, c := range []struct {
		name      string
		afterSent bool
		want      string
	}{
		{"never-arrived", false, api.OutcomeRolledBack},
		{"reply-lost", true, api.OutcomeCommitted},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			keys := authority.NewMem()
			f := &faults{}
			fleet := FleetAuthority{A: keys}
			src := nodeOpts{authority: fleet, wrap: func(peer ID, rt http.RoundTripper) http.RoundTripper { return faultTransport{next: rt, f: f} }}
			cl := newCluster(t, src, nodeOpts{authority: fleet})
			a, b := cl.nodes[0], cl.nodes[1]
			id := createAgent(t, a, "")
			if _, err := authority.Create(ctx, keys, id, string(a.ID())); err != nil {
				t.Fatal(err)
			}
			f.set("activate", c.afterSent, -1)
			f.set("resolve", false, -1)
			res := move(t, a, b, id)
			if res.Outcome != c.want {
				t.Fatalf("outcome %s (%s), want %s", res.Outcome, res.Reason, c.want)
			}
			f.heal()
			key, err := keys.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			holder, wantKey := b, string(b.ID())
			if c.want == api.OutcomeRolledBack {
				holder, wantKey = a, string(a.ID())
			}
			if key.Node != wantKey || key.Epoch < 2 {
				t.Fatalf("key = %v, want %s at epoch 2 or above", key.Holding, wantKey)
			}
			waitSteps(t, holder, id, 3)
			waitNoStaging(t, cl, holder, id)
			cl.checkHolder(holder, id)
			if holder == b {
				return
			}
			// The burned epoch does not stand in the way of the next move.
			if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
				t.Fatalf("next move: %s (%s), want committed", res.Outcome, res.Reason)
			}
			if key, err = keys.Get(ctx, id); err != nil || key.Node != string(b.ID()) {
				t.Fatalf("key after the next move = %v, %v; want %s", key.Holding, err, b.ID())
			}
			waitSteps(t, b, id, 3)
			cl.checkHolder(b, id)
		})
	}
}
