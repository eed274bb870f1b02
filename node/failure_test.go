package node

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/vfs"
)

// mangler rewrites the body of push streams named call: it flips the first
// content byte of the first frame (a corrupted chunk) or cuts the stream
// there (a truncated blob), for the first times requests (< 0: all).
type mangler struct {
	next     http.RoundTripper
	call     string
	truncate bool
	times    atomic.Int64
}

func (m *mangler) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get(api.CallHeader) == m.call && m.times.Load() != 0 {
		m.times.Add(-1)
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if i := nthIndex(body, '\n', 2); i >= 0 && i+1 < len(body) {
			if m.truncate {
				body = body[:i+1]
			} else {
				body[i+1] ^= 0x01
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	return m.next.RoundTrip(r)
}

func nthIndex(b []byte, c byte, n int) int {
	for i := range b {
		if b[i] == c {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

// checkCAS checks every blob a node stored for agent id hashes to its name:
// a corrupted or truncated chunk must never land in the store.
func checkCAS(t *testing.T, n *Node, id string) {
	t.Helper()
	dir := filepath.Join(n.cfg.Dir, "agents", id, casDir)
	ents, _ := n.fsys.ReadDir(dir)
	for _, e := range ents {
		b, err := vfs.ReadFile(n.fsys, filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if digest.FromBytes(b).Hex() != e.Name() {
			t.Errorf("CAS blob %s holds bytes hashing to %s", e.Name(), digest.FromBytes(b).Short())
		}
	}
}

func TestMoveRefusesCorruptedAndTruncatedChunks(t *testing.T) {
	cases := []struct {
		name     string
		call     string
		truncate bool
		times    int64
		want     string
	}{
		{"corrupted pre-copy chunk", "push", false, 1, api.OutcomeCommitted},
		{"truncated pre-copy blob", "push", true, 1, api.OutcomeCommitted},
		{"corrupted chunk while frozen, once", "prepare", false, 1, api.OutcomeCommitted},
		{"corrupted chunk every time", "prepare", false, -1, api.OutcomeRolledBack},
		{"truncated blob every time", "prepare", true, -1, api.OutcomeRolledBack},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &mangler{call: c.call, truncate: c.truncate}
			m.times.Store(c.times)
			cl := newCluster(t, nodeOpts{wrap: func(_ ID, rt http.RoundTripper) http.RoundTripper { m.next = rt; return m }}, nodeOpts{})
			a, b := cl.nodes[0], cl.nodes[1]
			ws := t.TempDir()
			os.WriteFile(filepath.Join(ws, "data.bin"), bytes.Repeat([]byte("capsule "), 4096), 0o644)
			id := createAgent(t, a, ws)
			res := move(t, a, b, id)
			if res.Outcome != c.want {
				t.Fatalf("outcome %s (%s), want %s", res.Outcome, res.Reason, c.want)
			}
			m.times.Store(0)
			holder := map[bool]*Node{true: b, false: a}[c.want == api.OutcomeCommitted]
			waitSteps(t, holder, id, 3)
			waitNoStaging(t, cl, holder, id)
			cl.checkHolder(holder, id)
			checkCAS(t, b, id)
		})
	}
}

// TestStaleNodeOfferIsRefused restores a node's folder from before a move
// (a node waking with an old epoch: a VM snapshot, a copied folder). Its
// offer is refused as stale and it stays frozen: it never runs the agent
// beside the real holder.
func TestStaleNodeOfferIsRefused(t *testing.T) {
	cl := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := cl.nodes[0], cl.nodes[1]
	id := createAgent(t, a, "")
	if _, err := a.StopAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "a-before")
	if err := copyTree(vfs.OS{}, a.cfg.Dir, vfs.OS{}, old); err != nil {
		t.Fatal(err)
	}
	if _, err := a.StartAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	waitSteps(t, a, id, 3)
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("first move: %+v", res)
	}
	a.Close(context.Background())

	zombie := newNode(t, old, nodeOpts{})
	if zombie.ID() != a.ID() {
		t.Fatalf("restored node has ID %s, want %s", zombie.ID(), a.ID())
	}
	cl.nodes[0] = zombie
	cl.link()
	res := move(t, zombie, b, id)
	if res.Outcome != api.OutcomeStale {
		t.Fatalf("zombie's move: %s (%s), want stale", res.Outcome, res.Reason)
	}
	if _, err := zombie.StartAgent(t.Context(), id); !errors.Is(err, api.ErrConflict) {
		t.Errorf("starting a stale agent: err = %v, want a conflict", err)
	}
	waitSteps(t, b, id, 3)
	cl.checkHolder(b, id)
}

// TestTargetDiskFull fills the target's disk (ENOSPC), or fails its fsync
// (EIO), at each place a move writes: the move rolls back, the agent runs
// on the source again and the target keeps no staging.
func TestTargetDiskFull(t *testing.T) {
	cases := []struct {
		name, where string
		ops         []vfs.Op
		err         error
	}{
		{"cas full", casDir, []vfs.Op{vfs.OpWrite, vfs.OpCreate}, vfs.ErrNoSpace},
		{"staging full", stagingDir, []vfs.Op{vfs.OpWrite, vfs.OpCreate}, vfs.ErrNoSpace},
		{"holder record full", vfs.TempPrefix + record.HolderFile + "*", []vfs.Op{vfs.OpWrite, vfs.OpCreate}, vfs.ErrNoSpace},
		// The promise creates the log; PREPARED is the first append.
		{"holder record append full", record.HolderFile, []vfs.Op{vfs.OpWrite}, vfs.ErrNoSpace},
		{"holder record append EIO", record.HolderFile, []vfs.Op{vfs.OpSync}, vfs.ErrIO},
		{"staging fsync EIO", stagingDir, []vfs.Op{vfs.OpSync}, vfs.ErrIO},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ffs := vfs.NewFaulty(vfs.OS{})
			cl := newCluster(t, nodeOpts{}, nodeOpts{fsys: ffs})
			a, b := cl.nodes[0], cl.nodes[1]
			id := createAgent(t, a, "")
			var rules []*vfs.Rule
			for _, op := range c.ops {
				rules = append(rules, ffs.Fail(op, c.where, c.err))
			}
			res := move(t, a, b, id)
			if res.Outcome != api.OutcomeRolledBack {
				t.Fatalf("outcome %s, want rolled back", res.Outcome)
			}
			hits := 0
			for _, r := range rules {
				hits += r.Hits()
			}
			if hits == 0 {
				t.Fatalf("the fault at %q was never reached", c.where)
			}
			ffs.Clear()
			waitSteps(t, a, id, 3)
			waitNoStaging(t, cl, a, id)
			cl.checkHolder(a, id)
		})
	}
}

// slowCall delays one call, keeping a move in flight.
type slowCall struct {
	next http.RoundTripper
	call string
	d    time.Duration
}

func (s slowCall) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get(api.CallHeader) == s.call {
		time.Sleep(s.d)
	}
	return s.next.RoundTrip(r)
}

func TestSecondConcurrentMoveRefused(t *testing.T) {
	slow := func(_ ID, rt http.RoundTripper) http.RoundTripper {
		return slowCall{rt, "offer", 300 * time.Millisecond}
	}
	cl := newCluster(t, nodeOpts{wrap: slow}, nodeOpts{}, nodeOpts{})
	a, b, c := cl.nodes[0], cl.nodes[1], cl.nodes[2]
	id := createAgent(t, a, "")
	mr, err := a.startMove(id, b.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []*Node{b, c} {
		if _, err := a.startMove(id, to.ID()); !errors.Is(err, api.ErrConflict) {
			t.Errorf("second move to %s: err = %v, want a conflict", to.ID().Short(), err)
		}
	}
	<-mr.done
	if res := mr.result(id, a.ID()); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("first move: %+v", res)
	}
	waitSteps(t, b, id, 3)
	cl.checkHolder(b, id)
}

// TestLostActivateWaitsThenResolves loses every activate and every resolve:
// the source must stay frozen (nobody runs: availability lost, never
// correctness) until the link heals and an operator resolves.
func TestLostActivateWaitsThenResolves(t *testing.T) {
	for _, after := range []bool{false, true} {
		name := map[bool]string{false: "request-lost", true: "reply-lost"}[after]
		t.Run(name, func(t *testing.T) {
			f := &faults{}
			cl := newCluster(t, faultyNode(f), nodeOpts{})
			a, b := cl.nodes[0], cl.nodes[1]
			id := createAgent(t, a, "")
			f.set("activate", after, -1)
			f.set("resolve", false, -1)
			if res := move(t, a, b, id); res.Outcome != api.OutcomeWaiting {
				t.Fatalf("Move returned %+v, want outcome waiting", res)
			}
			ag, _ := a.getTenant(id)
			ag.mu.Lock()
			mr := ag.src.move
			ag.mu.Unlock()
			waitOutcome(t, mr, api.OutcomeWaiting)
			time.Sleep(100 * time.Millisecond)
			// A lost request: nobody runs. A lost reply: the target took
			// over; the source must not run beside it.
			runners := 0
			if after {
				runners = 1
			}
			if got := cl.running(id); len(got) != runners || runners == 1 && got[0] != b.ID() {
				t.Fatalf("runners while waiting = %v, want %d (the target's)", got, runners)
			}
			// The operator cannot start it either: the move is past the
			// point of no return (PROTOCOL §6 R5).
			if _, err := a.StartAgent(t.Context(), id); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "point of no return") {
				t.Fatalf("agent start while waiting: %v, want a conflict past the point of no return", err)
			}
			if got := cl.running(id); len(got) != runners {
				t.Fatalf("runners after a refused start = %v, want %d", got, runners)
			}
			f.heal()
			st, err := a.Resolve(t.Context(), id, api.ResolveRequest{})
			if err != nil {
				t.Fatal(err)
			}
			<-mr.done
			want, holder := api.OutcomeRolledBack, a
			if after {
				want, holder = api.OutcomeCommitted, b
			}
			if got := mr.status().Outcome; got != want {
				t.Fatalf("after resolve: %s (%+v), want %s", got, st, want)
			}
			waitSteps(t, holder, id, 3)
			waitNoStaging(t, cl, holder, id)
			cl.checkHolder(holder, id)
		})
	}
}

func waitOutcome(t *testing.T, mr *moveRun, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if mr.status().Outcome == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("move outcome %q, want %q", mr.status().Outcome, want)
}

// TestShutdownFreezesAndRestartResumes checks graceful shutdown: the runner
// stops at a step boundary, the freeze is journaled, and a restart runs the
// agent again from where it stopped.
func TestShutdownFreezesAndRestartResumes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	n := newNode(t, dir, nodeOpts{})
	id := createAgent(t, n, "")
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	n2 := newNode(t, dir, nodeOpts{})
	waitSteps(t, n2, id, 3)
	cl := &cluster{t: t, nodes: []*Node{n2}}
	cl.checkHolder(n2, id)
	a, _ := n2.getTenant(id)
	events, _, _ := agentlog.Read(n2.fsys, filepath.Join(a.capsule(), journalInCap))
	var kinds []string
	for _, e := range events {
		if e.Kind != "tool_call" && e.Kind != "tool_result" {
			kinds = append(kinds, string(e.Kind))
		}
	}
	if got := strings.Join(kinds, ","); !strings.Contains(got, "frozen,resumed") {
		t.Errorf("lifecycle events = %s, want a frozen (node shutdown) then resumed", got)
	}
}

// TestTamperedHolderRecordFailsClosed edits the holder record while the
// node is down: the node refuses to run the agent.
func TestTamperedHolderRecordFailsClosed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	n := newNode(t, dir, nodeOpts{})
	id := createAgent(t, n, "")
	n.Close(context.Background())
	path := filepath.Join(dir, "agents", id, record.HolderFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(b, []byte(`"epoch":1,`), []byte(`"epoch":7,`), 1)
	if bytes.Equal(tampered, b) {
		t.Fatalf("no epoch 1 in the holder record:\n%s", b)
	}
	os.WriteFile(path, tampered, 0o600)
	n2 := newNode(t, dir, nodeOpts{})
	time.Sleep(50 * time.Millisecond)
	st, err := n2.Agent(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != api.StateBlocked || st.Steps != 0 {
		t.Errorf("status = %+v, want blocked with no steps", st)
	}
	if _, err := n2.StartAgent(t.Context(), id); err == nil {
		t.Error("StartAgent ran an agent whose holder record is invalid")
	}
}
