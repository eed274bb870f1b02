package render

import "github.com/agentcapsule/capsule/journal"

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
	reserve, _ := b.reserver(first)
	it, ok := b.buildUnit(&b.seg.units[last])
	whole := b.cost(&it, ok)
	cut := b.truncate(copyUnit(it), -1<<30)
	return fixed+reserve(last)+min(whole, b.cost(&cut, ok)) <= base
}
