package render

import "strconv"

// reserve is the base tokens the fit keeps free for what opens the
// conversation when the window starts at a cut: the digest of the units
// before it, or StartText. The digest's exact count is one tokenization
// per user request quoted, so the fit asks first for a cheap upper bound
// (atMost) and only where that does not settle the decision for the
// exact count (at): the decisions, and so the plan, are the same.
type reserve struct {
	b         *builder
	d         *digester
	first     int // the first unit that is not an instruction
	startCost int // the cost of StartText alone
	maxEvents int
	maxTools  []string
	// plain is the length of the digest bound's text without a request;
	// costs holds the exact counts and bounds the upper bounds, by the
	// request's unit.
	plain         int
	costs, bounds map[int32]int
	quoted        []byte // scratch for a quoted request
}

// requestFrame is what a quoted request adds to a digest besides its
// quoted text (see digestText).
const requestFrame = len(" Last omitted user request: .")

// reserver returns the reserve of a fit whose first unit that is not an
// instruction is first.
func (b *builder) reserver(first int) *reserve {
	r := &reserve{b: b, d: b.digester(), first: first, costs: map[int32]int{}, bounds: map[int32]int{}}
	r.maxEvents, r.maxTools = r.d.bound()
	if b.needsStart(first) {
		r.startCost = b.cnt.count(StartText) + perMessage
	}
	r.plain = len(digestText(r.maxEvents, r.maxTools, ""))
	return r
}

// at returns the reserve for a window that starts at unit cut. The bound
// differs between cuts only by the request quoted, the newest user unit
// before the cut: each is counted once.
func (r *reserve) at(cut int) int {
	if cut <= r.first {
		return r.startCost
	}
	k := r.d.prevUser[cut]
	n, ok := r.costs[k]
	if !ok {
		n = r.b.cnt.count(digestText(r.maxEvents, r.maxTools, r.b.request(r.d, cut))) + perMessage
		r.costs[k] = n
	}
	return max(r.startCost, n)
}

// atMost returns an upper bound of at(cut) that tokenizes nothing: a
// token holds at least one byte of the digest's text, which is valid
// UTF-8 (the request is quoted), so its length in bytes bounds its count.
func (r *reserve) atMost(cut int) int {
	if cut <= r.first {
		return r.startCost
	}
	k := r.d.prevUser[cut]
	if n, ok := r.costs[k]; ok {
		return max(r.startCost, n)
	}
	n, ok := r.bounds[k]
	if !ok {
		n = r.plain + perMessage
		if req := r.b.request(r.d, cut); req != "" {
			r.quoted = strconv.AppendQuote(r.quoted[:0], req)
			n += requestFrame + len(r.quoted)
		}
		r.bounds[k] = n
	}
	return max(r.startCost, n)
}
