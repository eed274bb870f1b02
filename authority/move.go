package authority

import (
	"context"
	"errors"
	"fmt"
)

// The move's transactions, built on an Authority's three calls alone.
// Each is one compare-and-swap on the agent's key after one read; a caller
// that already holds the current Entry (read before the freeze, say) saves
// the read by calling CompareAndSwap itself with the same next value.

// Create records a new agent held by node at epoch 1 (PROTOCOL §2: a new
// agent starts at epoch 1 on the node that creates it). It fails with a
// *ConflictError if the agent already has a key.
func Create(ctx context.Context, a Authority, agent, node string) (Entry, error) {
	return a.Put(ctx, agent, Holding{Node: node, Epoch: 1, State: Held})
}

// Activate is the move's point of no return: (source, e) → (target, e+1)
// in one compare-and-swap. It fails with a *ConflictError if the key does
// not hold source at e (held or moving), and with an
// *UnknownOutcomeError if the reply was lost: then call Settle.
func Activate(ctx context.Context, a Authority, agent, source string, e uint64, target string) (Entry, error) {
	return advance(ctx, a, agent, source, e, Holding{Node: target, Epoch: e + 1, State: Held})
}

// Burn fences a move that did not commit: (source, e) → (source, e+1), so
// that a late activate of epoch e+1 from source fails, and the source
// resumes at e+1. It fails like Activate.
func Burn(ctx context.Context, a Authority, agent, source string, e uint64) (Entry, error) {
	return advance(ctx, a, agent, source, e, Holding{Node: source, Epoch: e + 1, State: Held})
}

// Mark sets the state of (node, e) without changing holder or epoch: Moving
// while a move is in flight, Held again after it, Removed to end the agent.
func Mark(ctx context.Context, a Authority, agent, node string, e uint64, s State) (Entry, error) {
	return advance(ctx, a, agent, node, e, Holding{Node: node, Epoch: e, State: s})
}

// advance reads the key and swaps it for next if it holds node at e in a
// state a move may leave.
func advance(ctx context.Context, a Authority, agent, node string, e uint64, next Holding) (Entry, error) {
	cur, err := a.Get(ctx, agent)
	if errors.Is(err, ErrNotFound) {
		return Entry{}, &ConflictError{Agent: agent, Expect: Holding{Node: node, Epoch: e, State: Held}, Absent: true}
	}
	if err != nil {
		return Entry{}, err
	}
	if cur.Node != node || cur.Epoch != e || cur.State == Removed {
		return Entry{}, &ConflictError{Agent: agent, Expect: Holding{Node: node, Epoch: e, State: Held}, Now: cur}
	}
	return a.CompareAndSwap(ctx, agent, cur, next)
}

// Outcome is how Settle ended an ambiguous activate.
type Outcome string

// The outcomes of Settle.
const (
	// Committed: the target holds e+1; the source retires.
	Committed Outcome = "committed"
	// Burned: the source burned e+1 and holds it; it resumes at e+1.
	Burned Outcome = "burned"
	// Superseded: the key holds neither; someone else moved the agent.
	// The source stays frozen and an operator decides (PROTOCOL R9).
	Superseded Outcome = "superseded"
)

// ActivateAt is Activate for a move whose epoch E the move protocol chose
// (transfer.NextEpoch, above every epoch offered before): the key must
// name source at an epoch below E, and becomes (target, E). A burn of E
// (BurnAt, SettleAt) and the activate exclude each other: both swap from
// the same read, and the second finds the key changed or at E.
func ActivateAt(ctx context.Context, a Authority, agent, source, target string, epoch uint64) (Entry, error) {
	cur, err := below(ctx, a, agent, source, epoch)
	if err != nil {
		return Entry{}, err
	}
	return a.CompareAndSwap(ctx, agent, cur, Holding{Node: target, Epoch: epoch, State: Held})
}

// BurnAt is Burn for a move of epoch E: the key must name source below E,
// and becomes (source, E), so no activate of E can commit.
func BurnAt(ctx context.Context, a Authority, agent, source string, epoch uint64) (Entry, error) {
	cur, err := below(ctx, a, agent, source, epoch)
	if err != nil {
		return Entry{}, err
	}
	return a.CompareAndSwap(ctx, agent, cur, Holding{Node: source, Epoch: epoch, State: Held})
}

// below reads the key and requires it to name node at an epoch below E.
func below(ctx context.Context, a Authority, agent, node string, epoch uint64) (Entry, error) {
	expect := Holding{Node: node, Epoch: epoch - 1, State: Held}
	cur, err := a.Get(ctx, agent)
	if errors.Is(err, ErrNotFound) {
		return Entry{}, &ConflictError{Agent: agent, Expect: expect, Absent: true}
	}
	if err != nil {
		return Entry{}, err
	}
	if cur.Node != node || cur.Epoch >= epoch || cur.State == Removed {
		return Entry{}, &ConflictError{Agent: agent, Expect: expect, Now: cur}
	}
	return cur, nil
}

// Settle resolves the ambiguous moment after an activate of (source, e) →
// (target, e+1) whose reply was lost: SettleAt of epoch e+1.
func Settle(ctx context.Context, a Authority, agent, source string, e uint64, target string) (Outcome, Entry, error) {
	return SettleAt(ctx, a, agent, source, target, e+1)
}

// SettleAt resolves the ambiguous moment after an activate of epoch E from
// source to target whose reply was lost: it reads the key instead of
// asking the target. If the target holds E the move committed; if the
// source holds E an earlier burn landed; if the source holds an epoch
// below E it burns E (a later activate then fails); otherwise the agent
// was superseded. A burn that conflicts or whose reply is lost is read
// again, so SettleAt returns only a known outcome or the read's error.
func SettleAt(ctx context.Context, a Authority, agent, source, target string, epoch uint64) (Outcome, Entry, error) {
	for {
		cur, err := a.Get(ctx, agent)
		if err != nil {
			return "", Entry{}, fmt.Errorf("authority: settle %s: %w", agent, err)
		}
		switch {
		case cur.State == Removed:
			return Superseded, cur, nil
		case cur.Node == target && cur.Epoch == epoch:
			return Committed, cur, nil
		case cur.Node == source && cur.Epoch == epoch:
			return Burned, cur, nil
		case cur.Node != source || cur.Epoch > epoch:
			return Superseded, cur, nil
		}
		next, err := a.CompareAndSwap(ctx, agent, cur, Holding{Node: source, Epoch: epoch, State: Held})
		if err == nil {
			return Burned, next, nil
		}
		if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrUnknownOutcome) {
			return "", Entry{}, fmt.Errorf("authority: settle %s: %w", agent, err)
		}
		if ctx.Err() != nil {
			return "", Entry{}, fmt.Errorf("authority: settle %s: %w", agent, ctx.Err())
		}
	}
}
