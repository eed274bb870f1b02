package render

import (
	"fmt"

	"github.com/agentcapsule/capsule/journal"
)

// MinimumFits reports whether the instructions, the target's tools and
// the newest unit cut to its minimum (every tool result, or the user
// text, cut to nothing but its marker, unless the uncut unit is smaller),
// with the stub declarations that unit needs and the room for a digest
// or start text, fit the window: the condition under which the fitter
// promises an estimate within the window. Tests only.
func MinimumFits(events []journal.Event, t Target) bool {
	b := newBuilder(memSource(events), t)
	b.seg = segment(events)
	b.mapToolNames()
	b.tools = b.wireTools(t.Tools)
	factor, _ := calibrate(memSource(events), &b.seg, b.own, t.API, b.caps)
	base := baseBudget(b.budget(), factor)
	_, fixed := b.instructions()
	fixed += priming + b.toolTokens(b.tools)
	first, last := -1, -1
	for i := range b.seg.units {
		if b.seg.units[i].kind != unitInstr {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if last < 0 {
		return fixed <= base
	}
	reserve := b.reserver(first).at
	it, ok := b.buildUnit(&b.seg.units[last])
	whole := b.cost(&it, ok)
	cut := b.truncate(copyUnit(it), -1<<30)
	return fixed+reserve(last)+min(whole, b.cost(&cut, ok)) <= base
}

// ReserveBounded reports, as an error, a cut of events where the fit's
// cheap bound of the reserve is below the exact reserve: the bound lets
// the fit skip counting only if it never is. Tests only.
func ReserveBounded(events []journal.Event, t Target) error {
	b := newBuilder(memSource(events), t)
	b.seg = segment(events)
	first := -1
	for i := range b.seg.units {
		if b.seg.units[i].kind != unitInstr {
			first = i
			break
		}
	}
	if first < 0 {
		return nil
	}
	r := b.reserver(first)
	for cut := 0; cut <= len(b.seg.units); cut++ {
		if bound, exact := r.atMost(cut), r.at(cut); bound < exact {
			return fmt.Errorf("cut %d of %d units: bound %d below the reserve %d", cut, len(b.seg.units), bound, exact)
		}
	}
	return nil
}
