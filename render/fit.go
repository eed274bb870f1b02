package render

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/agentcapsule/capsule/journal"
)

// ErrEmpty is returned for a journal with no user or assistant message to
// send: every API needs at least one.
var ErrEmpty = errors.New("render: no conversation to render")

// StartText is the user turn put before a conversation that would
// otherwise open with the assistant, for APIs that require a user turn
// first (Anthropic, Gemini).
const StartText = "[Conversation start.]"

// NewPlan repairs, filters and fits a journal for one target. events must
// be in the journal's total order (clock, machine, seq); their IDs and
// hash chains are not used. The result depends only on events and t.
func NewPlan(events []journal.Event, t Target) (*Plan, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return newPlan(memSource(events), segment(events), t)
}

// newPlan plans a segmented journal whose bodies src reads.
func newPlan(src source, seg segmentation, t Target) (*Plan, error) {
	return newPlanMemo(src, seg, t, nil)
}

// newPlanMemo is newPlan reusing what an Incremental remembers of its
// previous plans, if m is not nil.
func newPlanMemo(src source, seg segmentation, t Target, m *memo) (*Plan, error) {
	b := newBuilder(src, t)
	b.seg = seg
	b.noteSegmentation()
	b.mapToolNames()
	if m != nil {
		m.begin(b)
	}
	b.tools = b.wireTools(t.Tools)
	factor, calibration := calibrate(src, &b.seg, b.own, t.API, b.caps)
	budget := b.budget()
	base := baseBudget(budget, factor)
	instrs, fixed := b.instructions()
	mem, pinned := b.workingMemory()
	fixed += priming + b.toolTokens(b.tools) + mem.tokens
	kept, cut := b.fit(base - fixed)
	if len(kept) == 0 {
		return nil, ErrEmpty
	}
	p := &Plan{Target: t, Caps: b.caps}
	p.Items = b.assemble(instrs, kept, cut)
	if pinned {
		p.Items = pinMemory(p.Items, mem)
		b.report.WorkingMemory = len(t.WorkingMemory)
	}
	b.applyPolicies(p)
	if p.Leading() == len(p.Items) {
		return nil, ErrEmpty // only instructions, or nothing at all
	}
	b.mapIDs(p)
	b.declareTools(p)
	b.estimate(p, factor, calibration, budget, base-fixed < 0)
	p.Report = b.report
	return p, nil
}

func (b *builder) noteSegmentation() {
	b.report.Orphans = b.seg.orphans
	b.report.Duplicates = b.seg.duplicates
	for _, i := range b.seg.malformed {
		b.report.Malformed = append(b.report.Malformed, int(i))
	}
	b.report.UnknownKinds = b.seg.unknown
}

// budget is the input token budget of the request.
func (b *builder) budget() int {
	if b.t.Window > 0 {
		return b.t.Window
	}
	if n := b.caps.ContextWindow - b.caps.MaxOutput; n > 0 {
		return n
	}
	return b.caps.ContextWindow
}

// baseBudget is the largest base count whose estimate fits budget.
func baseBudget(budget int, factor float64) int {
	n := int(float64(budget) / factor)
	for n > 0 && int(math.Ceil(factor*float64(n))) > budget {
		n--
	}
	return n
}

// instructions decodes every instruction: they are always kept.
func (b *builder) instructions() (map[int]Item, int) {
	out := map[int]Item{}
	total := 0
	for i := range b.seg.units {
		u := &b.seg.units[i]
		if u.kind != unitInstr {
			continue
		}
		if it, ok := b.buildInstr(u); ok {
			out[i] = it
			total += it.tokens
		}
	}
	return out, total
}

func (b *builder) toolTokens(tools []Tool) int {
	n := 0
	for _, t := range tools {
		n += b.cnt.count(t.Name) + b.cnt.count(t.Description) + b.cnt.count(string(t.Parameters)) + stubTokens
	}
	return n
}

// keptUnit is a unit inside the window and what it renders to.
type keptUnit struct {
	unit int
	item Item
	ok   bool // false when the unit renders to nothing
}

// fit walks the units from the newest backwards and keeps whole units
// while they fit in avail base tokens, leaving room for the digest of
// what it drops. The newest unit is always kept, truncated if it alone is
// too large. Only kept units are decoded; dropped ones are read from the
// segmentation headers, so the cost is the kept part plus a linear scan.
func (b *builder) fit(avail int) ([]keptUnit, int) {
	units := b.seg.units
	first, last := b.conversation()
	if last < 0 {
		return nil, 0
	}
	r := b.reserver(first)
	reserve, startCost := r.at, r.startCost
	var kept []keptUnit
	used := 0
	cut := last + 1
	for i := last; i >= 0; i-- {
		if units[i].kind == unitInstr {
			continue
		}
		saved := b.report.counters()
		it, ok := b.buildUnit(&units[i])
		cost := b.cost(&it, ok)
		if i == last && cost > avail-reserve(i) {
			it, cost = b.truncateToFit(it, ok, avail-reserve(i))
		} else if i != last && used+cost+r.atMost(i) > avail && used+cost+reserve(i) > avail {
			// It does not fit beside a digest; it may still fit if
			// everything older fits too and no digest is needed.
			// Unit i is built already; building it again would find its
			// stub declarations taken and under-count it.
			if used+cost <= avail-startCost {
				if rest, all := b.fitRest(i-1, used+cost, avail-startCost); all {
					kept = append(kept, keptUnit{unit: i, item: it, ok: ok})
					return append(kept, rest...), 0
				}
			}
			b.report.restore(saved) // the unit is dropped: it reports nothing
			break
		}
		used += cost
		kept = append(kept, keptUnit{unit: i, item: it, ok: ok})
		cut = i
	}
	return kept, cut
}

// digester returns a new digester of the plan. Its table of the newest
// user unit before each unit is the same for every digester of a plan,
// so it is computed once; each digester decodes the requests it quotes
// itself, as newDigester's do (a malformed one is noted by each).
func (b *builder) digester() *digester {
	if b.prevUser == nil {
		b.prevUser = newDigester(b).prevUser
	}
	return &digester{b: b, prevUser: b.prevUser, requests: map[int32]string{}}
}

// summary is the digest's count of the units and events before cut and
// the tools they used, through the summary an Incremental keeps.
func (b *builder) summary(cut int) (units, events int, tools []string) {
	if b.sums != nil {
		return b.sums.summary(b, cut)
	}
	return b.digester().summary(cut)
}

// request is d.request(cut), through the requests an Incremental
// remembers.
func (b *builder) request(d *digester, cut int) string {
	if b.requests != nil {
		return b.requests.request(d, cut)
	}
	return d.request(cut)
}

// conversation returns the first and the last unit that is not an
// instruction, or -1, -1; it reads only the units up to each.
func (b *builder) conversation() (first, last int) {
	units := b.seg.units
	first, last = -1, -1
	for i := range units {
		if units[i].kind != unitInstr {
			first = i
			break
		}
	}
	for i := len(units) - 1; i >= first && first >= 0; i-- {
		if units[i].kind != unitInstr {
			last = i
			break
		}
	}
	return first, last
}

// fitRest builds the units from i back to the first and reports whether
// all of them fit in avail beside used; it stops as soon as they cannot,
// so its cost is bounded by the window.
func (b *builder) fitRest(i, used, avail int) ([]keptUnit, bool) {
	saved := b.report.counters()
	var rest []keptUnit
	for ; i >= 0; i-- {
		u := &b.seg.units[i]
		if u.kind == unitInstr {
			continue
		}
		it, ok := b.buildUnit(u)
		used += b.cost(&it, ok)
		if used > avail {
			b.report.restore(saved)
			return nil, false
		}
		rest = append(rest, keptUnit{unit: i, item: it, ok: ok})
	}
	return rest, true
}

// needsStart reports whether the conversation may have to be opened with
// StartText: the API wants a user turn first and the first unit is not a
// user message that renders.
func (b *builder) needsStart(first int) bool {
	if b.t.API != Anthropic && b.t.API != Gemini {
		return false
	}
	u := &b.seg.units[first]
	if u.kind != unitUser {
		return true
	}
	saved := b.report.counters()
	_, ok := b.buildUser(u)
	b.report.restore(saved)
	return !ok
}

// buildUnit decodes a user or step unit, or replays it from the units an
// Incremental remembers.
func (b *builder) buildUnit(u *unit) (Item, bool) {
	if b.units != nil {
		return b.units.build(b, u)
	}
	return b.decodeUnit(u)
}

// decodeUnit decodes a user or step unit.
func (b *builder) decodeUnit(u *unit) (Item, bool) {
	if u.kind == unitUser {
		return b.buildUser(u)
	}
	return b.buildStep(u)
}

// cost is the base cost of a kept unit: a step counts the stub
// declarations its calls need. For an Anthropic model that always thinks,
// any step may end up rendered as text (policy.go), so a step costs the
// larger of both forms.
func (b *builder) cost(it *Item, ok bool) int {
	if !ok {
		return 0
	}
	if it.Kind != ItemStep {
		return it.tokens
	}
	it.tokens = stepTokens(it.Step)
	n := it.tokens + stubCost(it.Step)
	if b.t.API == Anthropic && b.caps.Thinking == ThinkingAlways {
		return max(n, b.cnt.count(textual(it.Step))+perMessage)
	}
	return n
}

// stubCost is the cost of the stub declarations a step's calls reserved.
func stubCost(st *Step) int {
	n := 0
	for i := range st.Parts {
		n += st.Parts[i].stub
	}
	return n
}

// assemble orders the final items: the instructions of the dropped part
// (kept, moved to the front), the digest, then the kept units in order
// with the instructions between them in place.
func (b *builder) assemble(instrs map[int]Item, kept []keptUnit, cut int) []Item {
	var front []int // the instructions before the cut, in order
	for i := range instrs {
		if i < cut {
			front = append(front, i)
		}
	}
	sort.Ints(front)
	var items []Item
	for _, i := range front {
		items = append(items, instrs[i])
	}
	units, events, tools := b.summary(cut)
	if units > 0 {
		text := digestText(events, tools, b.digester().request(cut))
		items = append(items, Item{Kind: ItemUser, Text: text, Synthetic: "digest", tokens: b.cnt.count(text) + perMessage})
		b.report.Digest = text
	}
	b.report.DroppedUnits, b.report.DroppedEvents = units, events
	b.report.KeptUnits = len(kept)
	for _, k := range kept {
		b.report.KeptEvents += b.seg.units[k.unit].size()
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].unit < kept[j].unit })
	k := 0
	for i := cut; i < len(b.seg.units); i++ {
		if it, ok := instrs[i]; ok {
			items = append(items, it)
			continue
		}
		if k < len(kept) && kept[k].unit == i {
			if kept[k].ok {
				items = append(items, kept[k].item)
			}
			k++
		}
	}
	return b.ensureStart(items)
}

// ensureStart puts a user turn before a conversation that opens with the
// assistant, where the API requires the user to speak first.
func (b *builder) ensureStart(items []Item) []Item {
	if b.t.API != Anthropic && b.t.API != Gemini {
		return items
	}
	i := 0
	for i < len(items) && items[i].Kind == ItemInstruction {
		i++
	}
	if i == len(items) || items[i].Kind != ItemStep {
		return items
	}
	start := Item{Kind: ItemUser, Text: StartText, Synthetic: "start", tokens: b.cnt.count(StartText) + perMessage}
	return append(items[:i:i], append([]Item{start}, items[i:]...)...)
}

// estimate fills the token estimate of the final plan.
func (b *builder) estimate(p *Plan, factor float64, calibration, budget int, over bool) {
	base := priming + b.toolTokens(p.Tools)
	for i := range p.Items {
		it := &p.Items[i]
		if it.Kind == ItemStep {
			it.tokens = stepTokens(it.Step)
		}
		base += it.tokens
	}
	sort.Ints(b.report.Malformed)
	sort.SliceStable(b.report.Whitespace, func(i, j int) bool { return b.report.Whitespace[i].Event < b.report.Whitespace[j].Event })
	e := &b.report.Tokens
	e.Factor, e.Calibration, e.Base, e.Budget = factor, calibration, base, budget
	e.Estimated = int(math.Ceil(factor * float64(base)))
	e.OverBudget = over || e.Estimated > budget
}

// String describes a plan's shape for debugging and test failures.
func (p *Plan) String() string {
	s := ""
	for _, it := range p.Items {
		switch it.Kind {
		case ItemInstruction:
			s += "I"
		case ItemUser:
			s += "U"
		case ItemStep:
			s += fmt.Sprintf("S%d/%d", len(it.Step.Parts), len(it.Step.Results))
		}
	}
	return s
}
