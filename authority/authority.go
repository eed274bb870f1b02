package authority

import (
	"context"
	"errors"
	"fmt"
)

// State is what the fleet records of an agent beside its holder and epoch.
type State string

// The states of an agent's key. Activate and Burn leave the agent Held;
// Moving is an optional mark a source may set while its move is in flight
// (shown by fleet status; the transactions accept it like Held); Removed
// ends the agent in the fleet and no transaction moves it afterwards.
const (
	Held    State = "held"
	Moving  State = "moving"
	Removed State = "removed"
)

// Valid reports whether s is one of the states above.
func (s State) Valid() bool {
	return s == Held || s == Moving || s == Removed
}

// Holding is the value of one agent's key: the node that holds the agent,
// the epoch it holds it at, and the state.
type Holding struct {
	Node  string `json:"node"`
	Epoch uint64 `json:"epoch"`
	State State  `json:"state"`
}

// String renders h for errors and logs: "n1@3 held".
func (h Holding) String() string {
	return fmt.Sprintf("%s@%d %s", h.Node, h.Epoch, h.State)
}

// Entry is an agent's key as read: its Holding, the revision of the
// write that made it (etcd's mod revision; a counter in Mem) and the
// stored bytes. CompareAndSwap requires both Revision and Value to be
// what the key still holds. Revision is for comparison and audit only:
// it is never an epoch.
type Entry struct {
	Holding
	Revision int64
	Value    []byte
}

// Authority is the store of agents' keys. Every implementation is
// linearizable: each call takes effect at one instant between its call
// and its return, and authoritytest checks it.
type Authority interface {
	// Get returns the agent's key, or an error wrapping ErrNotFound.
	Get(ctx context.Context, agent string) (Entry, error)
	// Put creates the agent's key with h if it is absent; otherwise it
	// returns a *ConflictError carrying what the key holds.
	Put(ctx context.Context, agent string, h Holding) (Entry, error)
	// CompareAndSwap replaces the key's value with next in one atomic
	// step if, and only if, its value and revision are still expect's.
	// Otherwise it returns a *ConflictError carrying what the key now
	// holds. A reply it could not read is an *UnknownOutcomeError: the
	// swap may or may not have happened, and the caller must Get.
	CompareAndSwap(ctx context.Context, agent string, expect Entry, next Holding) (Entry, error)
}

// Errors callers branch on.
var (
	// ErrNotFound means the agent has no key.
	ErrNotFound = errors.New("authority: agent not found")
	// ErrConflict means the key did not hold what a write expected.
	ErrConflict = errors.New("authority: conflict")
	// ErrUnknownOutcome means a write's reply was lost: read the key.
	ErrUnknownOutcome = errors.New("authority: outcome unknown")
	// ErrInvalid means a write was refused before it was sent: a
	// lowered epoch, an empty node, a state that does not exist.
	ErrInvalid = errors.New("authority: invalid write")
)

// ConflictError is a write refused because the key holds something else.
// Now is what the key holds (zero, with Absent set, if it has no key).
type ConflictError struct {
	Agent  string
	Expect Holding
	Now    Entry
	Absent bool
}

// Error names the agent, what was expected and what the key holds.
func (e *ConflictError) Error() string {
	if e.Absent {
		return fmt.Sprintf("authority: conflict: agent %s: expected %s, key absent", e.Agent, e.Expect)
	}
	return fmt.Sprintf("authority: conflict: agent %s: expected %s, holds %s (revision %d)",
		e.Agent, e.Expect, e.Now.Holding, e.Now.Revision)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// UnknownOutcomeError is a write whose reply was lost; Err is the
// transport's error.
type UnknownOutcomeError struct {
	Agent string
	Next  Holding
	Err   error
}

// Error names the agent, the write and the transport's error.
func (e *UnknownOutcomeError) Error() string {
	return fmt.Sprintf("authority: outcome unknown: agent %s: write %s: %v (read the key)", e.Agent, e.Next, e.Err)
}

// Is makes errors.Is(err, ErrUnknownOutcome) true.
func (e *UnknownOutcomeError) Is(target error) bool { return target == ErrUnknownOutcome }

// Unwrap returns the transport's error.
func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// CheckWrite refuses a write from cur to next that no transaction may
// make: an empty node, an unknown state, a lower epoch, or any change to
// a removed agent. Implementations call it before they send a write.
func CheckWrite(agent string, cur, next Holding) error {
	switch {
	case agent == "":
		return fmt.Errorf("%w: empty agent ID", ErrInvalid)
	case next.Node == "":
		return fmt.Errorf("%w: agent %s: empty holder node", ErrInvalid, agent)
	case !next.State.Valid():
		return fmt.Errorf("%w: agent %s: unknown state %q", ErrInvalid, agent, next.State)
	case next.Epoch < 1:
		return fmt.Errorf("%w: agent %s: epoch 0", ErrInvalid, agent)
	case next.Epoch < cur.Epoch:
		return fmt.Errorf("%w: agent %s: epoch %d below %d", ErrInvalid, agent, next.Epoch, cur.Epoch)
	case cur.State == Removed:
		return fmt.Errorf("%w: agent %s: removed", ErrInvalid, agent)
	}
	return nil
}
