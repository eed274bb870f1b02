// Package authoritytest is the conformance suite every authority.Authority
// runs (PROTOCOL "Fleet mode"): the move's transactions, the races where
// exactly one writer wins, the stale node refused, and a linearizability
// check of a concurrent history of one key with porcupine. Only tests
// import it.
package authoritytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/authority"
)

// Open returns the Authority under test. Every subtest uses its own agent
// IDs, so one store may serve them all.
type Open func(t *testing.T) authority.Authority

// Run runs the suite against the Authority open returns.
func Run(t *testing.T, open Open) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, authority.Authority)
	}{
		{"CreateGet", testCreateGet},
		{"ActivateBurn", testActivateBurn},
		{"StaleNodeRefused", testStaleNodeRefused},
		{"SwapComparesRevision", testSwapComparesRevision},
		{"InvalidWrites", testInvalidWrites},
		{"Settle", testSettle},
		{"RaceActivate", testRaceActivate},
		{"RaceActivateBurn", testRaceActivateBurn},
		{"AtEpochs", testAtEpochs},
		{"RaceActivateBurnAt", testRaceActivateBurnAt},
		{"Linearizable", testLinearizable},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

// agentID names a subtest's agent, distinct across subtests.
func agentID(t *testing.T, suffix string) string {
	return fmt.Sprintf("%s-%s", t.Name(), suffix)
}

func mustCreate(t *testing.T, a authority.Authority, agent, node string) authority.Entry {
	t.Helper()
	e, err := authority.Create(context.Background(), a, agent, node)
	if err != nil {
		t.Fatalf("Create(%s, %s): %v", agent, node, err)
	}
	return e
}

func mustGet(t *testing.T, a authority.Authority, agent string) authority.Entry {
	t.Helper()
	e, err := a.Get(context.Background(), agent)
	if err != nil {
		t.Fatalf("Get(%s): %v", agent, err)
	}
	return e
}

// conflictNow returns what a *ConflictError says the key holds, failing
// the test if err is not one.
func conflictNow(t *testing.T, err error) authority.Holding {
	t.Helper()
	var ce *authority.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, authority.ErrConflict) {
		t.Fatalf("error = %v, want a *ConflictError", err)
	}
	return ce.Now.Holding
}

func testCreateGet(t *testing.T, a authority.Authority) {
	ctx := context.Background()
	agent := agentID(t, "a")
	if _, err := a.Get(ctx, agent); !errors.Is(err, authority.ErrNotFound) {
		t.Fatalf("Get of an absent agent: %v, want ErrNotFound", err)
	}
	e := mustCreate(t, a, agent, "n1")
	want := authority.Holding{Node: "n1", Epoch: 1, State: authority.Held}
	if e.Holding != want || e.Revision == 0 {
		t.Fatalf("Create = %+v, want %v with a revision", e, want)
	}
	if got := mustGet(t, a, agent); got.Holding != want || got.Revision != e.Revision {
		t.Fatalf("Get = %+v, want %+v", got, e)
	}
	_, err := authority.Create(ctx, a, agent, "n2")
	if now := conflictNow(t, err); now != want {
		t.Fatalf("second Create conflict holds %v, want %v", now, want)
	}
}

func testActivateBurn(t *testing.T, a authority.Authority) {
	ctx := context.Background()
	agent := agentID(t, "a")
	mustCreate(t, a, agent, "n1")
	e, err := authority.Activate(ctx, a, agent, "n1", 1, "n2")
	if err != nil {
		t.Fatalf("Activate: %v", err)
	}
	if want := (authority.Holding{Node: "n2", Epoch: 2, State: authority.Held}); e.Holding != want {
		t.Fatalf("Activate = %v, want %v", e.Holding, want)
	}
	e, err = authority.Burn(ctx, a, agent, "n2", 2)
	if err != nil {
		t.Fatalf("Burn: %v", err)
	}
	if want := (authority.Holding{Node: "n2", Epoch: 3, State: authority.Held}); e.Holding != want {
		t.Fatalf("Burn = %v, want %v", e.Holding, want)
	}
	if _, err := authority.Mark(ctx, a, agent, "n2", 3, authority.Moving); err != nil {
		t.Fatalf("Mark moving: %v", err)
	}
	if _, err := authority.Activate(ctx, a, agent, "n2", 3, "n3"); err != nil {
		t.Fatalf("Activate from moving: %v", err)
	}
}

// testStaleNodeRefused: a node that wakes believing it still holds an old
// epoch is refused by the transaction itself, whatever it tries.
func testStaleNodeRefused(t *testing.T, a authority.Authority) {
	ctx := context.Background()
	agent := agentID(t, "a")
	asleep := mustCreate(t, a, agent, "n1") // what n1 read before it paused
	if _, err := authority.Activate(ctx, a, agent, "n1", 1, "n2"); err != nil {
		t.Fatalf("Activate: %v", err)
	}
	want := authority.Holding{Node: "n2", Epoch: 2, State: authority.Held}
	// n1 wakes and writes with what it read: the transaction itself refuses.
	for _, next := range []authority.Holding{
		{Node: "n3", Epoch: 2, State: authority.Held}, // its activate
		{Node: "n1", Epoch: 2, State: authority.Held}, // its burn
	} {
		_, err := a.CompareAndSwap(ctx, agent, asleep, next)
		if now := conflictNow(t, err); now != want {
			t.Fatalf("stale swap to %v: conflict holds %v, want %v", next, now, want)
		}
	}
	_, err := authority.Activate(ctx, a, agent, "n1", 1, "n3")
	if now := conflictNow(t, err); now != want {
		t.Fatalf("stale Activate conflict holds %v, want %v", now, want)
	}
	_, err = authority.Burn(ctx, a, agent, "n1", 1)
	if now := conflictNow(t, err); now != want {
		t.Fatalf("stale Burn conflict holds %v, want %v", now, want)
	}
	if got := mustGet(t, a, agent); got.Holding != want {
		t.Fatalf("after the stale node: %v, want %v", got.Holding, want)
	}
}

// testSwapComparesRevision: an Entry read before another write is refused
// even when the key has come back to the same holding since.
func testSwapComparesRevision(t *testing.T, a authority.Authority) {
	ctx := context.Background()
	agent := agentID(t, "a")
	old := mustCreate(t, a, agent, "n1")
	if _, err := authority.Mark(ctx, a, agent, "n1", 1, authority.Moving); err != nil {
		t.Fatalf("Mark moving: %v", err)
	}
	back, err := authority.Mark(ctx, a, agent, "n1", 1, authority.Held)
	if err != nil {
		t.Fatalf("Mark held: %v", err)
	}
	if back.Holding != old.Holding || back.Revision <= old.Revision {
		t.Fatalf("back = %+v, want %v at a revision above %d", back, old.Holding, old.Revision)
	}
	_, err = a.CompareAndSwap(ctx, agent, old, authority.Holding{Node: "n2", Epoch: 2, State: authority.Held})
	conflictNow(t, err)
	forged := back
	forged.Value = append([]byte(nil), back.Value...)
	forged.Value[len(forged.Value)-1] = ' '
	_, err = a.CompareAndSwap(ctx, agent, forged, authority.Holding{Node: "n2", Epoch: 2, State: authority.Held})
	conflictNow(t, err)
	if _, err := a.CompareAndSwap(ctx, agent, back, authority.Holding{Node: "n2", Epoch: 2, State: authority.Held}); err != nil {
		t.Fatalf("swap of the current entry: %v", err)
	}
}

func testInvalidWrites(t *testing.T, a authority.Authority) {
	ctx := context.Background()
	agent := agentID(t, "a")
	e := mustCreate(t, a, agent, "n1")
	e, err := authority.Burn(ctx, a, agent, "n1", 1)
	if err != nil {
		t.Fatalf("Burn: %v", err)
	}
	for name, next := range map[string]authority.Holding{
		"lower epoch": {Node: "n1", Epoch: 1, State: authority.Held},
		"no node":     {Epoch: 3, State: authority.Held},
		"bad state":   {Node: "n1", Epoch: 3, State: "running"},
	} {
		if _, err := a.CompareAndSwap(ctx, agent, e, next); !errors.Is(err, authority.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := authority.Mark(ctx, a, agent, "n1", 2, authority.Removed); err != nil {
		t.Fatalf("Mark removed: %v", err)
	}
	if _, err := authority.Activate(ctx, a, agent, "n1", 2, "n2"); !errors.Is(err, authority.ErrConflict) {
		t.Fatalf("Activate of a removed agent: %v, want ErrConflict", err)
	}
}

func testSettle(t *testing.T, a authority.Authority) {
	ctx := context.Background()
	committed, burned, superseded := agentID(t, "c"), agentID(t, "b"), agentID(t, "s")
	for _, id := range []string{committed, burned, superseded} {
		mustCreate(t, a, id, "n1")
	}
	if _, err := authority.Activate(ctx, a, committed, "n1", 1, "n2"); err != nil {
		t.Fatal(err)
	}
	if _, err := authority.Activate(ctx, a, superseded, "n1", 1, "n3"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		agent string
		want  authority.Outcome
		holds authority.Holding
	}{
		{committed, authority.Committed, authority.Holding{Node: "n2", Epoch: 2, State: authority.Held}},
		{burned, authority.Burned, authority.Holding{Node: "n1", Epoch: 2, State: authority.Held}},
		{superseded, authority.Superseded, authority.Holding{Node: "n3", Epoch: 2, State: authority.Held}},
	} {
		got, e, err := authority.Settle(ctx, a, c.agent, "n1", 1, "n2")
		if err != nil || got != c.want || e.Holding != c.holds {
			t.Errorf("Settle(%s) = %s, %v, %v; want %s, %v", c.agent, got, e.Holding, err, c.want, c.holds)
		}
	}
	// The target's late activate after the burn fails (PROTOCOL "Fleet mode").
	if _, err := authority.Activate(ctx, a, burned, "n1", 1, "n2"); !errors.Is(err, authority.ErrConflict) {
		t.Fatalf("late activate after burn: %v, want ErrConflict", err)
	}
	if got, _, err := authority.Settle(ctx, a, burned, "n1", 1, "n2"); err != nil || got != authority.Burned {
		t.Fatalf("Settle again after the burn = %s, %v; want burned", got, err)
	}
}

// race runs every write at once and returns how many succeeded; the
// others must be conflicts.
func race(t *testing.T, writes []func() error) int {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, len(writes))
	for i, w := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = w()
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, authority.ErrConflict):
			t.Errorf("write %d: %v, want success or ErrConflict", i, err)
		}
	}
	return won
}

func testRaceActivate(t *testing.T, a authority.Authority) {
	ctx := context.Background()
	for round := range 5 {
		agent := agentID(t, fmt.Sprint(round))
		mustCreate(t, a, agent, "n0")
		var writes []func() error
		for i := 1; i <= 8; i++ {
			writes = append(writes, func() error {
				_, err := authority.Activate(ctx, a, agent, "n0", 1, fmt.Sprintf("n%d", i))
				return err
			})
		}
		if won := race(t, writes); won != 1 {
			t.Fatalf("round %d: %d activates won, want exactly 1", round, won)
		}
		if got := mustGet(t, a, agent); got.Epoch != 2 || got.Node == "n0" {
			t.Fatalf("round %d: key holds %v, want some target at epoch 2", round, got.Holding)
		}
	}
}

// testRaceActivateBurn: the source's burn and the target's activate of the
// same epoch race; exactly one wins and the key says which.
func testRaceActivateBurn(t *testing.T, a authority.Authority) {
	ctx := context.Background()
	for round := range 10 {
		agent := agentID(t, fmt.Sprint(round))
		mustCreate(t, a, agent, "src")
		won := race(t, []func() error{
			func() error { _, err := authority.Activate(ctx, a, agent, "src", 1, "dst"); return err },
			func() error { _, err := authority.Burn(ctx, a, agent, "src", 1); return err },
		})
		if won != 1 {
			t.Fatalf("round %d: %d of activate and burn won, want exactly 1", round, won)
		}
		if got := mustGet(t, a, agent); got.Epoch != 2 {
			t.Fatalf("round %d: key holds %v, want epoch 2", round, got.Holding)
		}
	}
}

// testAtEpochs: the move's own epoch E may jump past the key's epoch (a
// rolled-back offer burned nothing); the key must name the source below E.
func testAtEpochs(t *testing.T, a authority.Authority) {
	ctx := context.Background()
	agent := agentID(t, "a")
	mustCreate(t, a, agent, "n1")
	e, err := authority.ActivateAt(ctx, a, agent, "n1", "n2", 3)
	if err != nil || e.Holding != (authority.Holding{Node: "n2", Epoch: 3, State: authority.Held}) {
		t.Fatalf("ActivateAt(3) = %v, %v; want n2@3", e.Holding, err)
	}
	if _, err := authority.BurnAt(ctx, a, agent, "n2", 3); !errors.Is(err, authority.ErrConflict) {
		t.Fatalf("BurnAt of the epoch the key holds: %v, want ErrConflict", err)
	}
	if _, err := authority.ActivateAt(ctx, a, agent, "n1", "n3", 4); !errors.Is(err, authority.ErrConflict) {
		t.Fatalf("ActivateAt from a node the key does not name: %v, want ErrConflict", err)
	}
	out, e, err := authority.SettleAt(ctx, a, agent, "n2", "n3", 6)
	if err != nil || out != authority.Burned || e.Holding != (authority.Holding{Node: "n2", Epoch: 6, State: authority.Held}) {
		t.Fatalf("SettleAt(6) = %s, %v, %v; want burned at n2@6", out, e.Holding, err)
	}
	if _, err := authority.ActivateAt(ctx, a, agent, "n2", "n3", 6); !errors.Is(err, authority.ErrConflict) {
		t.Fatalf("the late ActivateAt(6) after the burn: %v, want ErrConflict", err)
	}
}

func testRaceActivateBurnAt(t *testing.T, a authority.Authority) {
	ctx := context.Background()
	for round := range 10 {
		agent := agentID(t, fmt.Sprint(round))
		mustCreate(t, a, agent, "src")
		won := race(t, []func() error{
			func() error { _, err := authority.ActivateAt(ctx, a, agent, "src", "dst", 4); return err },
			func() error { _, err := authority.BurnAt(ctx, a, agent, "src", 4); return err },
		})
		if won != 1 {
			t.Fatalf("round %d: %d of activate and burn at 4 won, want exactly 1", round, won)
		}
	}
}
