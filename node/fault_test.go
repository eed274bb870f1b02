package node

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
)

// faultTransport wraps a peer transport and fails named calls: before the
// request is sent (the request is lost) or after the reply arrived (the
// reply is lost; the peer did the work). It is the seed's test double.
type faultTransport struct {
	next http.RoundTripper
	f    *faults
}

type faults struct {
	mu    sync.Mutex
	rules map[string]*rule // by call (api.CallHeader value)
}

type rule struct {
	after bool // fail after the peer handled it
	times int  // failures left; < 0: always
}

var errInjected = errors.New("injected fault")

func (f *faults) take(call string) (fail, after bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rules[call]
	if r == nil || r.times == 0 {
		return false, false
	}
	if r.times > 0 {
		r.times--
	}
	return true, r.after
}

func (f *faults) set(call string, after bool, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rules == nil {
		f.rules = map[string]*rule{}
	}
	f.rules[call] = &rule{after: after, times: times}
}

func (f *faults) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

func (t faultTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	fail, after := t.f.take(r.Header.Get(api.CallHeader))
	if fail && !after {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, fmt.Errorf("%w: request lost", errInjected)
	}
	resp, err := t.next.RoundTrip(r)
	if fail && err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%w: reply lost", errInjected)
	}
	return resp, err
}

func faultyNode(f *faults) nodeOpts {
	return nodeOpts{wrap: func(peer ID, rt http.RoundTripper) http.RoundTripper { return faultTransport{next: rt, f: f} }}
}

// TestMoveSurvivesEveryLostCall fails one named call of the move, once or
// always, before or after the target handles it, driving the real node code
// through every phase; then it checks that exactly one node runs the agent,
// that it is the expected one, that the other keeps no staging, and that
// the holder's capsule and journal verify with no step lost or run twice.
func TestMoveSurvivesEveryLostCall(t *testing.T) {
	cases := []struct {
		call  string
		after bool
		times int
		want  string // outcome
	}{
		{"have", false, 1, api.OutcomeCommitted},
		{"have", true, 1, api.OutcomeCommitted},
		{"push", false, 1, api.OutcomeCommitted},
		{"push", true, 1, api.OutcomeCommitted},
		{"offer", false, 1, api.OutcomeCommitted},
		{"offer", true, 1, api.OutcomeCommitted},
		{"offer", false, -1, api.OutcomeRolledBack},
		{"offer", true, -1, api.OutcomeRolledBack},
		{"prepare", false, 1, api.OutcomeCommitted},
		{"prepare", true, 1, api.OutcomeCommitted},
		{"prepare", false, -1, api.OutcomeRolledBack},
		{"prepare", true, -1, api.OutcomeRolledBack},
		{"activate", false, 1, api.OutcomeRolledBack}, // resolve fences the target: epoch burned
		{"activate", true, 1, api.OutcomeCommitted},   // resolve learns it committed
		{"abort", false, 3, api.OutcomeRolledBack},    // with prepare lost: abort retried until the staging is gone
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s/%d", c.call, map[bool]string{false: "request-lost", true: "reply-lost"}[c.after], c.times)
		t.Run(name, func(t *testing.T) {
			f := &faults{}
			cl := newCluster(t, faultyNode(f), nodeOpts{})
			a, b := cl.nodes[0], cl.nodes[1]
			id := createAgent(t, a, "")
			f.set(c.call, c.after, c.times)
			if c.call == "abort" {
				f.set("prepare", false, -1) // force a rollback that needs an abort
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
			waitSteps(t, holder, id, 3)
			waitNoStaging(t, cl, holder, id)
			cl.checkHolder(holder, id)
		})
	}
}

// waitNoStaging gives a rolled-back move's abort time to reach the target.
func waitNoStaging(t *testing.T, cl *cluster, holder *Node, id string) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		clean := true
		for _, n := range cl.nodes {
			if n == holder {
				continue
			}
			a, err := n.getTenant(id)
			if err != nil {
				continue
			}
			a.mu.Lock()
			if a.holder.Pending() != nil || exists(n.fsys, a.path(stagingDir)) && !emptyDir(n, a.path(stagingDir)) {
				clean = false
			}
			a.mu.Unlock()
		}
		if clean {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func emptyDir(n *Node, dir string) bool {
	ents, err := n.fsys.ReadDir(dir)
	return err == nil && len(ents) == 0
}
