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

// Do runs f as client's operation in and records it.
func (h *History) Do(client int, in Input, f func() Output) {
	call := h.clock.Add(1)
	out := f()
	ret := h.clock.Add(1)
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

// Len returns the number of operations recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// seed is the randomized tests' seed: AUTHORITY_SEED if set, else a fresh
// one. Tests print it with the command that replays it.
func seed(t *testing.T) uint64 {
	if s := os.Getenv("AUTHORITY_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("AUTHORITY_SEED=%q: %v", s, err)
		}
		return n
	}
	return rand.Uint64()
}

// testLinearizable runs clients that read the key and swap it (an
// activate to a random node or a burn) at once, and checks the history.
func testLinearizable(t *testing.T, a authority.Authority) {
	s := seed(t)
	t.Logf("seed %d (replay: AUTHORITY_SEED=%d go test -run '%s')", s, s, t.Name())
	agent := agentID(t, "a")
	start := KeyOf(mustCreate(t, a, agent, "n0"))
	var h History
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client(t, a, agent, &h, c, rand.New(rand.NewPCG(s, uint64(c))))
		}()
	}
	wg.Wait()
	if res := h.Check(start); res != porcupine.Ok {
		t.Fatalf("history of %d operations is %s, want linearizable (seed %d)", h.Len(), res, s)
	}
}

// client does 25 rounds of read, then swap with what it read.
func client(t *testing.T, a authority.Authority, agent string, h *History, c int, r *rand.Rand) {
	ctx := context.Background()
	for range 25 {
		var cur authority.Entry
		h.Do(c, Input{}, func() Output {
			e, err := a.Get(ctx, agent)
			if err != nil {
				t.Errorf("client %d: Get: %v", c, err)
			}
			cur = e
			return Output{OK: err == nil, Now: KeyOf(e)}
		})
		next := authority.Holding{Node: cur.Node, Epoch: cur.Epoch + 1, State: authority.Held}
		if r.IntN(2) == 0 {
			next.Node = fmt.Sprintf("n%d", r.IntN(4))
		}
		h.Do(c, Input{CAS: true, Expect: KeyOf(cur), Next: next}, func() Output {
			return swapOutput(t, a, agent, cur, next)
		})
	}
}

func swapOutput(t *testing.T, a authority.Authority, agent string, cur authority.Entry, next authority.Holding) Output {
	e, err := a.CompareAndSwap(context.Background(), agent, cur, next)
	if err == nil {
		return Output{OK: true, Now: KeyOf(e)}
	}
	var ce *authority.ConflictError
	if !errors.As(err, &ce) {
		t.Errorf("CompareAndSwap: %v", err)
		return Output{}
	}
	return Output{Now: KeyOf(ce.Now)}
}
