package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/agentcapsule/capsule/authority"
	"github.com/agentcapsule/capsule/authority/authoritytest"
	"github.com/agentcapsule/capsule/authority/etcd"
	"github.com/agentcapsule/capsule/e2e/faultproxy"
)

// proxied returns an Authority that reaches etcd through a fault proxy,
// and one that reaches it directly, on the same key space.
func proxied(t *testing.T) (*faultproxy.Proxy, *etcd.Authority, *etcd.Authority) {
	t.Helper()
	p, err := faultproxy.New("127.0.0.1:0", server.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, newAuthority(t, p.Addr()), newAuthority(t, server.addr)
}

// swapLost runs a swap whose outcome the fault hides, and checks that the
// caller is told it does not know.
func swapLost(t *testing.T, a *etcd.Authority, cur authority.Entry, next authority.Holding) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := a.CompareAndSwap(ctx, "a1", cur, next)
	var ue *authority.UnknownOutcomeError
	if !errors.As(err, &ue) || !errors.Is(err, authority.ErrUnknownOutcome) {
		t.Fatalf("swap with its reply lost: %v, want an *UnknownOutcomeError", err)
	}
}

// TestLostActivateReplyCommitted: the activate reached etcd and committed,
// its reply was lost; the source reads the key, sees the target at e+1,
// and retires (PROTOCOL "Fleet mode", the ambiguous moment).
func TestLostActivateReplyCommitted(t *testing.T) {
	p, src, direct := proxied(t)
	cur, err := authority.Create(ctxT(t), src, "a1", "n1")
	if err != nil {
		t.Fatal(err)
	}
	p.LoseReplies(true)
	swapLost(t, src, cur, authority.Holding{Node: "n2", Epoch: 2, State: authority.Held})
	want := authority.Holding{Node: "n2", Epoch: 2, State: authority.Held}
	if got, err := direct.Get(ctxT(t), "a1"); err != nil || got.Holding != want {
		t.Fatalf("key after the lost reply = %v, %v; want %v (the request arrived)", got.Holding, err, want)
	}
	p.LoseReplies(false)
	p.Cut()
	out, e, err := authority.Settle(ctxT(t), src, "a1", "n1", 1, "n2")
	if err != nil || out != authority.Committed || e.Holding != want {
		t.Fatalf("Settle = %s, %v, %v; want committed at %v", out, e.Holding, err, want)
	}
}

// TestLostActivateNeverArrived: the source's link to etcd is cut before the
// activate gets through; the source cannot know, reads the key after the
// link heals, still finds itself at e, burns e+1 and resumes; the
// target's late activate then fails.
func TestLostActivateNeverArrived(t *testing.T) {
	p, src, direct := proxied(t)
	cur, err := authority.Create(ctxT(t), src, "a1", "n1")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Partition(); err != nil {
		t.Fatal(err)
	}
	swapLost(t, src, cur, authority.Holding{Node: "n2", Epoch: 2, State: authority.Held})
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	out, e, err := authority.Settle(ctxT(t), src, "a1", "n1", 1, "n2")
	burned := authority.Holding{Node: "n1", Epoch: 2, State: authority.Held}
	if err != nil || out != authority.Burned || e.Holding != burned {
		t.Fatalf("Settle = %s, %v, %v; want burned, %v", out, e.Holding, err, burned)
	}
	if _, err := authority.Activate(ctxT(t), direct, "a1", "n1", 1, "n2"); !errors.Is(err, authority.ErrConflict) {
		t.Fatalf("the target's late activate: %v, want ErrConflict", err)
	}
	if _, err := direct.CompareAndSwap(ctxT(t), "a1", cur, authority.Holding{Node: "n2", Epoch: 2, State: authority.Held}); !errors.Is(err, authority.ErrConflict) {
		t.Fatalf("a replay of the lost swap: %v, want ErrConflict", err)
	}
}

// TestLinearizableUnderFaults records a concurrent history of one agent's
// key through a proxy that cuts the connections and loses replies at
// random, and checks it with porcupine: swaps whose replies were lost are
// of unknown outcome, and the history must still be linearizable.
func TestLinearizableUnderFaults(t *testing.T) {
	p, a, direct := proxied(t)
	s := authoritytest.Seed(t)
	// Faults land at random: record again (on a fresh key) until at least
	// one swap's outcome was unknown, so the check covers that case.
	var h *authoritytest.History
	var start authority.Entry
	for attempt := 1; attempt <= 5 && (h == nil || h.Unknown() == 0); attempt++ {
		agent := fmt.Sprintf("a%d", attempt)
		var err error
		if start, err = authority.Create(ctxT(t), direct, agent, "n0"); err != nil {
			t.Fatal(err)
		}
		stop, faults := make(chan struct{}), make(chan int)
		go chaos(p, rand.New(rand.NewPCG(s, uint64(attempt))), stop, faults)
		h = authoritytest.Record(t, a, agent, s, 4, 20, 300*time.Millisecond)
		close(stop)
		<-faults
	}
	if h.Unknown() == 0 {
		t.Fatalf("no swap of unknown outcome in 5 attempts (seed %d)", s)
	}
	t.Logf("%d operations, %d of unknown outcome", h.Len(), h.Unknown())
	if res := h.Check(authoritytest.KeyOf(start)); res != porcupine.Ok {
		t.Fatalf("history of %d operations under faults is %s, want linearizable (seed %d)", h.Len(), res, s)
	}
}

// chaos cuts connections or loses replies for a while, at random, until
// stop; then it heals the proxy and reports how many faults it injected.
func chaos(p *faultproxy.Proxy, r *rand.Rand, stop <-chan struct{}, faults chan<- int) {
	n := 0
	defer func() { p.Heal(); faults <- n }()
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(20+r.IntN(60)) * time.Millisecond):
		}
		switch r.IntN(3) {
		case 0:
			p.Cut()
			n++
		case 1:
			p.LoseReplies(true)
			time.Sleep(time.Duration(10+r.IntN(40)) * time.Millisecond)
			p.LoseReplies(false)
			p.Cut() // the stream lost bytes: start it again
			n++
		}
	}
}
