package render

import (
	"fmt"
	"math"
	"sort"
)

// markerReserve bounds the tokens of one truncation marker.
const markerReserve = 24

// truncationMarker ends a text cut to fit the window.
func truncationMarker(kept, total int) string {
	return fmt.Sprintf("\n[truncated to fit the context window: %d of %d tokens shown]", kept, total)
}

// truncateTries bounds how often truncateToFit cuts again before it
// takes the minimum.
const truncateTries = 4

// truncateToFit cuts the newest unit until its cost, counted as cost
// counts it (stub declarations, and the text form where a step may be
// sent as text), fits room; if that takes more than a few tries it cuts
// the unit to its minimum. It returns the unit and its cost.
func (b *builder) truncateToFit(it Item, ok bool, room int) (Item, int) {
	saved := len(b.report.Truncated)
	target := room
	if it.Step != nil {
		target -= stubCost(it.Step) // declared whatever the cut
	}
	for try := 0; ; try++ {
		if try == truncateTries {
			target = math.MinInt / 2
		}
		cut := b.truncate(copyUnit(it), target)
		cost := b.cost(&cut, ok)
		if cost <= room || try == truncateTries {
			return cut, cost
		}
		b.report.Truncated = b.report.Truncated[:saved] // cut again, from the whole unit
		target -= cost - room
	}
}

// copyUnit copies what truncate changes in place: a step's results.
func copyUnit(it Item) Item {
	if it.Step != nil {
		st := *it.Step
		st.Results = append([]Result(nil), st.Results...)
		it.Step = &st
	}
	return it
}

// truncate shrinks the newest unit to fit room base tokens: tool results
// first, each cut to a common cap (the largest cap that fits), then a
// user text. The unit stays whole: no call or result is removed.
func (b *builder) truncate(it Item, room int) Item {
	switch it.Kind {
	case ItemStep:
		b.truncateResults(it.Step, room)
		it.tokens = stepTokens(it.Step)
	case ItemUser:
		if it.tokens > room {
			it.Text, it.tokens = b.cut(it.Text, room-perMessage-markerReserve, "")
			it.tokens += perMessage
		}
	}
	return it
}

func (b *builder) truncateResults(st *Step, room int) {
	other := stepTokens(st)
	sizes := make([]int, len(st.Results))
	for i := range st.Results {
		sizes[i] = st.Results[i].tokens - perResult
		other -= sizes[i]
	}
	allowed := room - other - markerReserve*len(sizes)
	limit := waterLevel(sizes, allowed)
	for i := range st.Results {
		r := &st.Results[i]
		if sizes[i] <= limit {
			continue
		}
		r.Content, r.tokens = b.cut(r.Content, limit, r.CallID)
		r.tokens += perResult
		r.Truncated = true
	}
}

// cut shortens text to at most max tokens plus a marker, and records it.
func (b *builder) cut(text string, max int, callID string) (string, int) {
	total := b.cnt.count(text)
	if max < 0 {
		max = 0
	}
	prefix, n := b.cnt.prefix(text, max)
	out := prefix + truncationMarker(n, total)
	b.report.Truncated = append(b.report.Truncated, Truncation{CallID: callID, From: total, To: n})
	return out, b.cnt.count(out)
}

// waterLevel returns the largest cap c such that the sum over sizes of
// min(size, c) is at most allowed (0 if even that is too much).
func waterLevel(sizes []int, allowed int) int {
	if len(sizes) == 0 {
		return 0
	}
	s := append([]int(nil), sizes...)
	sort.Ints(s)
	rest := allowed
	for i, v := range s {
		left := len(s) - i
		if v*left > rest {
			if rest <= 0 {
				return 0
			}
			return rest / left
		}
		rest -= v
	}
	return s[len(s)-1] // everything fits
}
