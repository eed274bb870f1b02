package render

import (
	"maps"
	"slices"
	"sort"
)

// unitMemo remembers the units earlier plans of one Incremental built, so
// a later plan replays them instead of decoding their bodies again. Only
// closed units are remembered: a user message, or a step that is not the
// open one (no later event can add to a closed step or pair a result with
// it). What else a build depends on is fixed for one Incremental (the
// target) or checked: the request names of the tools, which depend on
// every name the journal uses, must be the ones the units were built
// under, else everything is forgotten. A replay makes the report entries
// the build made and takes stub declarations as the build would, in the
// order of this plan. Like textMemo it keeps two generations, about one
// window of units.
type unitMemo struct {
	cur, prev map[int32]*builtUnit
	names     map[string]string // the wireNames the units were built under
	open      int32             // key of the open step, never remembered, or -1
}

// builtUnit is a unit as built, and what building it added to the report.
type builtUnit struct {
	item                       Item
	ok                         bool
	kept, dropped, attachments int
	synthesized                []CallNote
	malformed                  []int
	whitespace                 []WhitespaceNote
}

// openKey returns the key of the open step, or -1.
func (s *segmenter) openKey() int32 {
	if s.cur < 0 {
		return -1
	}
	return unitKey(&s.seg, &s.seg.units[s.cur])
}

// unitKey names a unit by its first event, which no other unit holds.
func unitKey(g *segmentation, u *unit) int32 {
	if u.kind != unitStep {
		return u.event
	}
	return g.stepEvents[u.evStart]
}

// begin starts a plan whose tools go by names.
func (m *unitMemo) begin(names map[string]string) {
	if !maps.Equal(names, m.names) {
		m.cur, m.prev, m.names = nil, nil, maps.Clone(names)
	}
	m.prev, m.cur = m.cur, make(map[int32]*builtUnit, len(m.cur))
}

// build returns unit u as b.decodeUnit would, replaying it if an earlier
// plan built it.
func (m *unitMemo) build(b *builder, u *unit) (Item, bool) {
	key := unitKey(&b.seg, u)
	if key == m.open {
		return b.decodeUnit(u)
	}
	e, hit := m.cur[key]
	if !hit {
		if e, hit = m.prev[key]; hit {
			m.cur[key] = e
		}
	}
	if hit {
		return e.replay(b)
	}
	before := b.report.counters()
	it, ok := b.decodeUnit(u)
	m.cur[key] = record(&b.report, before, it, ok)
	return copyItem(it), ok
}

// record keeps a built unit and what its build added to r since before.
func record(r *Report, before counters, it Item, ok bool) *builtUnit {
	e := &builtUnit{item: copyItem(it), ok: ok,
		kept: r.ReasoningKept - before.kept, dropped: r.ReasoningDropped - before.dropped,
		attachments: r.Attachments - before.attachments}
	if n := len(r.Synthesized) - before.synthesized; n > 0 {
		e.synthesized = slices.Clone(r.Synthesized[:n]) // a build puts its notes first
	}
	if len(r.Malformed) > before.malformed {
		e.malformed = slices.Clone(r.Malformed[before.malformed:])
	}
	if len(r.Whitespace) > before.whitespace {
		e.whitespace = slices.Clone(r.Whitespace[before.whitespace:])
	}
	return e
}

// replay returns the remembered unit and makes the report entries and
// stub declarations its build made.
func (e *builtUnit) replay(b *builder) (Item, bool) {
	r := &b.report
	r.ReasoningKept += e.kept
	r.ReasoningDropped += e.dropped
	r.Attachments += e.attachments
	if e.synthesized != nil {
		r.Synthesized = append(slices.Clone(e.synthesized), r.Synthesized...)
	}
	r.Malformed = append(r.Malformed, e.malformed...)
	r.Whitespace = append(r.Whitespace, e.whitespace...)
	it := copyItem(e.item)
	if it.Step != nil {
		for i := range it.Step.Parts {
			if p := &it.Step.Parts[i]; p.Kind == PartCall {
				p.stub = b.takeStub(p.Call.JournalName, p.Call.Name)
			}
		}
	}
	return it, e.ok
}

// copyItem copies what later stages of a plan change in place: a step's
// parts and results.
func copyItem(it Item) Item {
	if it.Step != nil {
		st := *it.Step
		st.Parts = slices.Clone(st.Parts)
		st.Results = slices.Clone(st.Results)
		it.Step = &st
	}
	return it
}

// stable returns how many units at the start of the segmentation no later
// event changes: those before the open step (or all units, without one).
// Deferred instructions are not units of the segmenter yet.
func (s *segmenter) stable() int {
	if s.cur >= 0 {
		return s.cur
	}
	return len(s.seg.units)
}

// summaryMemo keeps the digest's summary of the units before a cut across
// the plans of one Incremental, so that a cut that moves forward costs
// the units it passes, not the whole journal before it. It summarizes
// only stable units (segmenter.stable); a cut that moves back starts it
// afresh.
type summaryMemo struct {
	stable        int // set by Incremental.Plan
	upTo          int // units [0, upTo) are summarized
	units, events int
	seen          map[int32]bool // names by segmentation.names index
	tools         []string       // the tool names, in order of first use
}

// summary returns digester.summary(cut).
func (m *summaryMemo) summary(b *builder, cut int) (units, events int, tools []string) {
	if cut < m.upTo || m.seen == nil {
		*m = summaryMemo{stable: m.stable, seen: map[int32]bool{}}
	}
	for ; m.upTo < min(cut, m.stable); m.upTo++ {
		m.add(&b.seg, m.upTo)
	}
	if m.upTo < cut { // units that may still change: summarized apart
		tail := summaryMemo{units: m.units, events: m.events, seen: maps.Clone(m.seen), tools: slices.Clone(m.tools)}
		for i := m.upTo; i < cut; i++ {
			tail.add(&b.seg, i)
		}
		return tail.result()
	}
	return m.result()
}

// add summarizes unit i, as digester.summary does.
func (m *summaryMemo) add(g *segmentation, i int) {
	u := &g.units[i]
	if u.kind == unitInstr {
		return
	}
	m.units++
	m.events += u.size()
	for _, c := range g.callsOf(u) {
		if !m.seen[c.name] {
			m.seen[c.name] = true
			m.tools = append(m.tools, g.callName(&c))
		}
	}
}

// result returns the summary, with the tools sorted and deduplicated.
func (m *summaryMemo) result() (units, events int, tools []string) {
	tools = slices.Clone(m.tools)
	sort.Strings(tools)
	return m.units, m.events, slices.Compact(tools)
}
