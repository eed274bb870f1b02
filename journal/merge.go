package journal

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors of Merge.
var (
	// ErrFork marks two different events at the same (machine, seq).
	ErrFork = errors.New("journal: fork")
	// ErrInvalid marks a journal that does not verify.
	ErrInvalid = errors.New("journal: does not verify")
)

// ForkError names the two events of a fork.
type ForkError struct {
	Machine string
	Seq     uint64
	A, B    string // the ids of the two events
}

// Error names the machine, the seq and both ids.
func (e *ForkError) Error() string {
	return fmt.Sprintf("%v: machine %s seq %d is both %s and %s", ErrFork, e.Machine, e.Seq, e.A, e.B)
}

// Unwrap returns ErrFork.
func (e *ForkError) Unwrap() error { return ErrFork }

// VerifyError carries the problems of a journal that does not verify.
type VerifyError struct {
	Problems []Problem
}

// Error counts the problems and names the first three.
func (e *VerifyError) Error() string {
	msg := fmt.Sprintf("%v: %d problem(s)", ErrInvalid, len(e.Problems))
	for i, p := range e.Problems {
		if i == 3 {
			return msg + "; …"
		}
		msg += "; " + p.String()
	}
	return msg
}

// Unwrap returns ErrInvalid.
func (e *VerifyError) Unwrap() error { return ErrInvalid }

// Compare orders events in the journal's total order: by clock, then
// machine, then seq (docs/FORMAT.md §7.3).
func Compare(a, b *Event) int {
	if c := cmp.Compare(a.Clock, b.Clock); c != 0 {
		return c
	}
	if c := strings.Compare(a.Machine, b.Machine); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID) // only in broken journals
}

// Sort puts events in total order (clock, machine, seq).
func Sort(events []Event) {
	slices.SortFunc(events, func(a, b Event) int { return Compare(&a, &b) })
}

// Merge returns the set union of two journals by event id, in total order.
// Two different events at one (machine, seq) are a fork: Merge returns a
// *ForkError naming both (the one from a first). The union is verified
// (chains, clocks, epochs, order); a result that does not verify is
// returned as a *VerifyError. Merge trusts the ids of its inputs, which
// ParseLine, Decode and Seal check or compute. Inputs in total order (as a
// verified journal is) merge in linear time; others are sorted first.
func Merge(a, b []Event) ([]Event, error) {
	a, b = sorted(a), sorted(b)
	out := make([]Event, 0, max(len(a), len(b)))
	heads := map[string]Head{} // the last event taken of each machine
	for i, j := 0, 0; i < len(a) || j < len(b); {
		var e *Event
		switch c := compareAt(a, i, b, j); {
		case c < 0:
			e, i = &a[i], i+1
		case c > 0:
			e, j = &b[j], j+1
		default: // the same event in both
			e, i, j = &a[i], i+1, j+1
		}
		h, seen := heads[e.Machine]
		switch {
		case seen && e.Seq <= h.Seq && e.ID == h.ID:
			continue // repeated within one input
		case seen && e.Seq <= h.Seq:
			return nil, forkAt(a, b, e.Machine, e.Seq)
		}
		out = append(out, *e)
		heads[e.Machine] = Head{Seq: e.Seq, ID: e.ID}
	}
	if probs := verifyChains(out); len(probs) > 0 {
		return nil, &VerifyError{Problems: probs}
	}
	return out, nil
}

// compareAt compares a[i] and b[j] in total order; an exhausted side
// comes last.
func compareAt(a []Event, i int, b []Event, j int) int {
	switch {
	case i >= len(a):
		return 1
	case j >= len(b):
		return -1
	}
	return Compare(&a[i], &b[j])
}

// sorted returns events in total order, copying them only if they are not.
func sorted(events []Event) []Event {
	if slices.IsSortedFunc(events, func(x, y Event) int { return Compare(&x, &y) }) {
		return events
	}
	c := slices.Clone(events)
	Sort(c)
	return c
}

// forkAt names the first two different events at (machine, seq), looking
// in a before b.
func forkAt(a, b []Event, machine string, seq uint64) error {
	var ids []string
	for _, in := range [][]Event{a, b} {
		for i := range in {
			if e := &in[i]; e.Machine == machine && e.Seq == seq && !slices.Contains(ids, e.ID) {
				ids = append(ids, e.ID)
			}
		}
	}
	return &ForkError{Machine: machine, Seq: seq, A: ids[0], B: ids[len(ids)-1]}
}

// verifyChains is Verify without the id check, for events whose ids are
// known to be right.
func verifyChains(events []Event) []Problem {
	c := newChecker()
	for i := range events {
		c.add(&events[i], i+1)
	}
	return c.probs
}
