package render

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"reflect"

	"github.com/agentcapsule/capsule/journal"
)

// Incremental plans a journal that grows between calls, such as the agent
// loop's, reusing the work of the previous call: Plan of a journal that
// extends the previous call's events (the same prefix) for the same
// target segments only the new events, and decodes and counts only the
// units and texts the previous plan did not build. Its plan is NewPlan's
// for the same arguments, item for item and report for report.
//
// What it keeps is exactly what does not depend on later events: the
// segmenter's state after the prefix (units, pairing, the open step and
// the instructions deferred behind it, which a later event may still
// change, are kept open, not closed), the token counts of the texts the
// previous plan counted, and the closed units it built (unitMemo).
// Everything that depends on the whole journal (closing the open step,
// the fit, the digest, ID and tool-name maps, stubs, calibration) is
// recomputed by every call from that state, as NewPlan computes it. A different target, or events that are not an
// extension of the previous ones (fewer, or a different event at the
// previous call's last index, as after a merge placed an event earlier in
// total order), start afresh.
//
// It holds what an Index holds (about forty bytes per event, no body)
// plus the texts and units of about one window. The zero value is ready;
// it is not safe for concurrent use.
type Incremental struct {
	t    Target
	seg  *segmenter
	last journal.Event // the previous call's last event
	n    int           // events segmented
	memo memo
	// anon holds a fingerprint of each event segmented while some event
	// had no ID (unsealed events, in tests): without IDs an event can
	// repeat, and only the whole prefix tells an extension from a journal
	// whose prefix changed. Sealed events have unique IDs, so there the
	// previous last event, at its index, is enough.
	anon []uint64
}

// memo is what an Incremental remembers of its previous plans.
type memo struct {
	texts    textMemo
	units    unitMemo
	requests requestMemo
	sums     summaryMemo
	// pieces is the counter's memo of pre-token piece counts, kept across
	// plans (the encoding is fixed per target) so that texts no plan
	// counted before, such as each plan's digest bounds, which differ by
	// their event count, are mostly map lookups.
	pieces map[string]int
}

// maxPieces bounds the piece memo; past it the memo starts afresh.
const maxPieces = 1 << 16

// begin lends the memo to a plan's builder.
func (m *memo) begin(b *builder) {
	if m.pieces == nil || len(m.pieces) > maxPieces {
		m.pieces = make(map[string]int, 1024)
	}
	m.requests.turn()
	b.cnt.texts, b.cnt.memo, b.units, b.requests, b.sums = &m.texts, m.pieces, &m.units, &m.requests, &m.sums
	m.units.begin(b.wireNames)
}

// Plan repairs, filters and fits events for t, as NewPlan does.
func (c *Incremental) Plan(events []journal.Event, t Target) (*Plan, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if !c.extends(events, t) {
		c.reset(t, len(events))
	}
	for i := c.n; i < len(events); i++ {
		c.seg.add(events[i].Kind, events[i].Body)
		if c.anon != nil || events[i].ID == "" {
			c.fingerprint(events, i)
		}
	}
	c.n = len(events)
	if c.n > 0 {
		c.last = events[c.n-1]
	}
	c.memo.texts.turn()
	c.memo.units.open = c.seg.openKey()
	c.memo.sums.stable = c.seg.stable()
	return newPlanMemo(memSource(events), c.seg.snapshot(), t, &c.memo)
}

// extends reports whether events and t continue the previous call. The
// working memory is not compared: nothing kept depends on it (its
// instruction is built by every plan), so a change of it keeps the cache.
func (c *Incremental) extends(events []journal.Event, t Target) bool {
	t.WorkingMemory = c.t.WorkingMemory
	if c.seg == nil || len(events) < c.n || !reflect.DeepEqual(t, c.t) {
		return false
	}
	if c.n == 0 {
		return true
	}
	e := &events[c.n-1]
	if !(e.ID == c.last.ID && e.Clock == c.last.Clock && e.Machine == c.last.Machine &&
		e.Seq == c.last.Seq && e.Kind == c.last.Kind && bytes.Equal(e.Body, c.last.Body)) {
		return false
	}
	if c.anon == nil {
		return true
	}
	for i := 0; i < c.n; i++ {
		if i >= len(c.anon) || fingerprint(&events[i]) != c.anon[i] {
			return false
		}
	}
	return true
}

// fingerprint records events[i]'s fingerprint, backfilling those before
// it the first time an event without an ID shows up.
func (c *Incremental) fingerprint(events []journal.Event, i int) {
	for j := len(c.anon); j <= i; j++ {
		c.anon = append(c.anon, fingerprint(&events[j]))
	}
}

// fingerprint hashes what identifies an event without an ID.
func fingerprint(e *journal.Event) uint64 {
	h := fnv.New64a()
	h.Write([]byte(e.ID))
	h.Write([]byte{0})
	h.Write([]byte(e.Machine))
	h.Write([]byte{0})
	h.Write([]byte(e.Kind))
	h.Write([]byte{0})
	var n [16]byte
	binary.LittleEndian.PutUint64(n[:8], e.Seq)
	binary.LittleEndian.PutUint64(n[8:], e.Clock)
	h.Write(n[:])
	h.Write(e.Body)
	return h.Sum64()
}

// reset starts a new cache for target t.
func (c *Incremental) reset(t Target, n int) {
	c.t, c.n, c.last, c.anon = cloneTarget(t), 0, journal.Event{}, nil
	c.seg = newSegmenter(n)
	c.memo = memo{}
}

// cloneTarget copies what a caller could change in place after a call:
// the tool set and the capabilities.
func cloneTarget(t Target) Target {
	if t.Caps != nil {
		caps := *t.Caps
		t.Caps = &caps
	}
	if t.Tools != nil {
		tools := make([]Tool, len(t.Tools))
		for i, tool := range t.Tools {
			tool.Parameters = bytes.Clone(tool.Parameters)
			tools[i] = tool
		}
		t.Tools = tools
	}
	return t
}

// snapshot returns the segmentation of the events added so far, as
// finish would, without closing the open step: the segmenter can go on.
// The result shares the segmenter's arenas, so it is valid until the next
// add; slices that finish would change are copied or clipped.
func (s *segmenter) snapshot() segmentation {
	g := s.seg
	if len(s.deferred) > 0 {
		g.units = append(g.units[:len(g.units):len(g.units)], s.deferred...)
	}
	g.orphans = g.orphans[:len(g.orphans):len(g.orphans)]
	g.duplicates = g.duplicates[:len(g.duplicates):len(g.duplicates)]
	g.malformed = g.malformed[:len(g.malformed):len(g.malformed)]
	g.convEvents = 0
	for i := range g.units {
		if g.units[i].kind != unitInstr {
			g.convEvents += g.units[i].size()
		}
	}
	return g
}

// requestMemo remembers the user requests digests quote (shortened), by
// the event of their user unit, across the plans of one Incremental: a
// user event's body does not change while the journal extends. Like
// textMemo it keeps two generations, the requests of about one window.
type requestMemo struct {
	cur, prev map[int32]string
}

// turn starts a new plan.
func (m *requestMemo) turn() {
	m.prev, m.cur = m.cur, make(map[int32]string, len(m.cur))
}

// request returns d.request(cut), remembered by the event of the user
// unit it quotes. A body that does not decode is not remembered: decoding
// it again notes it as malformed again, as a plan without memo does.
func (m *requestMemo) request(d *digester, cut int) string {
	i := d.prevUser[cut]
	if i < 0 {
		return ""
	}
	ev := d.b.seg.units[i].event
	s, ok := m.cur[ev]
	if !ok {
		s, ok = m.prev[ev]
	}
	if !ok {
		// d remembers failures too: a request d has seen that is not
		// remembered here failed earlier in this plan.
		_, seen := d.requests[i]
		before := len(d.b.report.Malformed)
		if s = d.request(cut); seen || len(d.b.report.Malformed) != before {
			return s
		}
	}
	m.cur[ev] = s
	return s
}

// textMemo remembers the token counts of whole texts across the plans of
// one Incremental: a count is a function of the text and the encoding
// (fixed per target), so a remembered count is the count. It keeps the
// texts counted by the current and the previous plan only, so it holds
// about one window of text.
type textMemo struct {
	cur, prev map[string]int
}

// turn starts a new plan: the texts the previous plan did not count
// again are forgotten.
func (m *textMemo) turn() {
	m.prev, m.cur = m.cur, make(map[string]int, len(m.cur))
}

// count returns the memoized count of s, or f(s) remembered.
func (m *textMemo) count(s string, f func(string) int) int {
	if n, ok := m.cur[s]; ok {
		return n
	}
	n, ok := m.prev[s]
	if !ok {
		n = f(s)
	}
	m.cur[s] = n
	return n
}
