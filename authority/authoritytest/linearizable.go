package authoritytest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/agentcapsule/capsule/authority"
)

// History records operations on one key, stamping calls and returns
// with a shared counter: an operation that returned before another was
// called has the smaller stamps, which is all porcupine needs.
type History struct {
	clock atomic.Int64
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (h *History) add(client int, in Input, out Output, call, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// Check reports whether the history is linearizable from the key start.
func (h *History) Check(start Key) porcupine.CheckResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	return porcupine.CheckOperationsTimeout(InitModel(start), h.ops, 20*time.Second)
}

// Unknown returns the number of swaps of unknown outcome recorded.
func (h *History) Unknown() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, op := range h.ops {
		if op.Output.(Output).Unknown {
			n++
		}
	}
	return n
}

// Len returns the number of operations recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Seed is a randomized test's seed: AUTHORITY_SEED if set, else a fresh
// one. It logs the seed with the command that replays it.
func Seed(t *testing.T) uint64 {
	n := rand.Uint64()
	if s := os.Getenv("AUTHORITY_SEED"); s != "" {
		var err error
		if n, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("AUTHORITY_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (replay: AUTHORITY_SEED=%d go test -run '%s')", n, n, t.Name())
	return n
}

// testLinearizable runs clients that read the key and swap it (an
// activate to a random node or a burn) at once, and checks the history.
func testLinearizable(t *testing.T, a authority.Authority) {
	s := Seed(t)
	agent := agentID(t, "a")
	start := KeyOf(mustCreate(t, a, agent, "n0"))
	h := Record(t, a, agent, s, 4, 25, 0)
	if res := h.Check(start); res != porcupine.Ok {
		t.Fatalf("history of %d operations is %s, want linearizable (seed %d)", h.Len(), res, s)
	}
}

// Record runs clients clients, each doing rounds rounds of a read and a
// swap of agent's key with what it read, and returns their history. Each
// call gets timeout (none if zero). Under faults a failed read only ends
// its round; a swap whose reply was lost is recorded as of unknown
// outcome, with no return (it may take effect at any later time).
func Record(t *testing.T, a authority.Authority, agent string, seed uint64, clients, rounds int, timeout time.Duration) *History {
	var h History
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := client{t: t, a: a, agent: agent, h: &h, id: c, r: rand.New(rand.NewPCG(seed, uint64(c))), timeout: timeout}
			for range rounds {
				cl.round()
			}
		}()
	}
	wg.Wait()
	return &h
}

// never is the return stamp of an operation whose outcome is unknown.
const never = int64(1) << 62

type client struct {
	t       *testing.T
	a       authority.Authority
	agent   string
	h       *History
	id      int
	r       *rand.Rand
	timeout time.Duration
}

func (c *client) ctx() (context.Context, context.CancelFunc) {
	if c.timeout == 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), c.timeout)
}

// round reads the key, then swaps it for an activate to a random node or
// a burn.
func (c *client) round() {
	ctx, cancel := c.ctx()
	call := c.h.clock.Add(1)
	cur, err := c.a.Get(ctx, c.agent)
	cancel()
	if err != nil {
		return // a read that failed changed nothing
	}
	c.h.add(c.id, Input{}, Output{OK: true, Now: KeyOf(cur)}, call, c.h.clock.Add(1))
	next := authority.Holding{Node: cur.Node, Epoch: cur.Epoch + 1, State: authority.Held}
	if c.r.IntN(2) == 0 {
		next.Node = fmt.Sprintf("n%d", c.r.IntN(4))
	}
	ctx, cancel = c.ctx()
	defer cancel()
	call = c.h.clock.Add(1)
	e, err := c.a.CompareAndSwap(ctx, c.agent, cur, next)
	ret := c.h.clock.Add(1)
	in := Input{CAS: true, Expect: KeyOf(cur), Next: next}
	var ce *authority.ConflictError
	switch {
	case err == nil:
		c.h.add(c.id, in, Output{OK: true, Now: KeyOf(e)}, call, ret)
	case errors.As(err, &ce):
		c.h.add(c.id, in, Output{Now: KeyOf(ce.Now)}, call, ret)
	case errors.Is(err, authority.ErrUnknownOutcome):
		c.h.add(c.id, in, Output{Unknown: true}, call, never)
	default:
		c.t.Errorf("client %d: CompareAndSwap: %v", c.id, err)
	}
}
