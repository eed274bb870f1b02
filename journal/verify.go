package journal

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// Problem is one thing wrong with a journal. Line counts from 1 in the file
// (or in the slice given to Verify); Machine is empty when the line did not
// parse far enough to tell.
type Problem struct {
	Line    int    `json:"line"`
	Machine string `json:"machine,omitempty"`
	Code    string `json:"code"`
	Msg     string `json:"msg"`
}

// The codes a Problem carries, for callers and tests that branch on them.
const (
	CodeParse     = "parse"     // the line is not a valid event (bad JSON, envelope or id)
	CodeTorn      = "torn"      // the last line has no newline: an interrupted append
	CodeID        = "id"        // the id is not the hash of the content
	CodeDuplicate = "duplicate" // the same event appears twice
	CodeFork      = "fork"      // two different events at one (machine, seq)
	CodeSeq       = "seq"       // seq is not one more than the machine's previous
	CodePrev      = "prev"      // prev is not the id of the machine's previous event
	CodeClock     = "clock"     // clock does not increase along the machine's chain
	CodeEpoch     = "epoch"     // epoch decreases along the machine's chain
	CodeOrder     = "order"     // the line is not in total order (clock, machine, seq)
	CodeCommitted = "committed" // the committed prefix does not match the manifest's record
)

// String formats p as "line N: machine M: code: message".
func (p Problem) String() string {
	m := p.Machine
	if m == "" {
		m = "?"
	}
	return fmt.Sprintf("line %d: machine %s: %s: %s", p.Line, m, p.Code, p.Msg)
}

// Verify checks a journal given in file order: every id against its content,
// and for every machine that seq runs 1, 2, 3..., that each prev is the id of
// the machine's preceding event, that clocks strictly increase and epochs
// never decrease; and that the events are in total order (clock, machine,
// seq). It returns every problem found, in line order; none means the
// journal verifies (docs/FORMAT.md §7.4).
func Verify(events []Event) []Problem {
	probs := checkIDs(events)
	c := newChecker()
	for i := range events {
		c.add(&events[i], i+1)
	}
	return mergeProblems(probs, c.probs)
}

// checkIDs recomputes every id, in parallel.
func checkIDs(events []Event) []Problem {
	workers := runtime.GOMAXPROCS(0)
	per := (len(events) + workers - 1) / max(workers, 1)
	out := make([][]Problem, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers && w*per < len(events); w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w * per; i < min(len(events), (w+1)*per); i++ {
				if p, bad := idProblem(&events[i], i+1); bad {
					out[w] = append(out[w], p)
				}
			}
		}(w)
	}
	wg.Wait()
	var all []Problem
	for _, ps := range out {
		all = append(all, ps...)
	}
	return all
}

func idProblem(e *Event, line int) (Problem, bool) {
	want, err := ComputeID(e)
	switch {
	case err != nil:
		return Problem{Line: line, Machine: e.Machine, Code: CodeParse, Msg: err.Error()}, true
	case want != e.ID:
		return Problem{Line: line, Machine: e.Machine, Code: CodeID, Msg: fmt.Sprintf("id %s is not the hash of the content (%s)", e.ID, want)}, true
	}
	return Problem{}, false
}

// mergeProblems interleaves two problem lists sorted by line.
func mergeProblems(a, b []Problem) []Problem {
	out := make([]Problem, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].Line <= b[0].Line {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	out = append(append(out, a...), b...)
	if len(out) == 0 {
		return nil
	}
	return out
}

// chain is what the checker remembers of one machine.
type chain struct {
	machine string
	head    Head
	line    int        // line of the head
	seen    seqHistory // of each seq after base: id prefix and line, to tell duplicates from forks
	base    uint64     // seqs up to base were committed before the checked text
}

// position is an event's place in the total order.
type position struct {
	clock   uint64
	machine string
	seq     uint64
	line    int
}

func (p position) compare(q position) int {
	if c := cmp.Compare(p.clock, q.clock); c != 0 {
		return c
	}
	if c := cmp.Compare(p.machine, q.machine); c != 0 {
		return c
	}
	return cmp.Compare(p.seq, q.seq)
}

// checker verifies chains and order event by event, so a reader can check a
// journal while it streams through.
type checker struct {
	chains map[string]*chain
	recent []*chain // the chains of recent machines, checked before the map
	last   position
	probs  []Problem
}

// chain returns the chain of machine m, creating it on first sight. A
// journal has few machines, so a short list answers most lookups without
// hashing the name.
func (c *checker) chain(m string) *chain {
	for _, ch := range c.recent {
		if sameName(ch.machine, m) {
			return ch
		}
	}
	ch := c.chains[m]
	if ch == nil {
		ch = &chain{machine: m}
		c.chains[m] = ch
	}
	if len(c.recent) < 8 {
		c.recent = append(c.recent, ch)
	} else {
		c.recent[int(ch.head.Seq)%8] = ch
	}
	return ch
}

func newChecker() *checker { return &checker{chains: map[string]*chain{}} }

// startAfter makes the checker continue a committed prefix with these heads.
func (c *checker) startAfter(heads map[string]Head) {
	for m, h := range heads {
		c.chains[m] = &chain{machine: m, head: h, base: h.Seq}
		if p := (position{clock: h.Clock, machine: m, seq: h.Seq}); p.compare(c.last) > 0 {
			c.last = p
		}
	}
}

func (c *checker) report(line int, e *Event, code, format string, args ...any) {
	c.probs = append(c.probs, Problem{Line: line, Machine: e.Machine, Code: code, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) add(e *Event, line int) {
	c.order(e, line)
	ch := c.chain(e.Machine)
	if e.Seq <= ch.head.Seq && ch.head.Seq > 0 {
		c.repeat(ch, e, line)
		return
	}
	c.link(ch, e, line)
	ch.head = Head{Seq: e.Seq, ID: e.ID, Clock: e.Clock, Epoch: e.Epoch}
	ch.line = line
	if uint64(ch.seen.len())+ch.base == e.Seq-1 { // after a gap, stop remembering
		ch.seen.add(idPrefix(e.ID), line)
	}
}

func (c *checker) order(e *Event, line int) {
	p := position{clock: e.Clock, machine: e.Machine, seq: e.Seq, line: line}
	if c.last.machine != "" && p.compare(c.last) <= 0 {
		c.report(line, e, CodeOrder, "(clock %d, machine %s, seq %d) does not come after (clock %d, machine %s, seq %d)%s",
			p.clock, p.machine, p.seq, c.last.clock, c.last.machine, c.last.seq, lineRef(c.last.line))
	}
	c.last = p
}

func lineRef(line int) string {
	if line == 0 {
		return " of the committed journal"
	}
	return fmt.Sprintf(" at line %d", line)
}

// repeat handles an event whose seq is not above its machine's head.
func (c *checker) repeat(ch *chain, e *Event, line int) {
	i := int(e.Seq) - 1 - int(ch.base)
	switch {
	case e.Seq <= ch.base:
		c.report(line, e, CodeSeq, "seq %d is already committed (committed head is seq %d)", e.Seq, ch.base)
	case i < ch.seen.len() && ch.seen.id(i) == idPrefix(e.ID):
		c.report(line, e, CodeDuplicate, "event %s (seq %d) repeats line %d", e.ID, e.Seq, ch.seen.line(i))
	case i < ch.seen.len():
		c.report(line, e, CodeFork, "seq %d is %s here but a different event at line %d", e.Seq, e.ID, ch.seen.line(i))
	default:
		c.report(line, e, CodeSeq, "seq %d does not follow seq %d%s", e.Seq, ch.head.Seq, lineRef(ch.line))
	}
}

// link checks e against the head of its machine's chain.
func (c *checker) link(ch *chain, e *Event, line int) {
	h := ch.head
	if h.Seq == 0 {
		if e.Seq != 1 {
			c.report(line, e, CodeSeq, "first event of the machine has seq %d, want 1", e.Seq)
		}
		return
	}
	if e.Seq != h.Seq+1 {
		c.report(line, e, CodeSeq, "seq %d does not follow seq %d%s (want %d)", e.Seq, h.Seq, lineRef(ch.line), h.Seq+1)
	}
	if e.Seq == h.Seq+1 && e.Prev != h.ID {
		c.report(line, e, CodePrev, "prev %s is not the id of seq %d%s (%s)", e.Prev, h.Seq, lineRef(ch.line), h.ID)
	}
	if e.Clock <= h.Clock {
		c.report(line, e, CodeClock, "clock %d is not greater than clock %d of seq %d%s", e.Clock, h.Clock, h.Seq, lineRef(ch.line))
	}
	if e.Epoch < h.Epoch {
		c.report(line, e, CodeEpoch, "epoch %d is lower than epoch %d of seq %d%s", e.Epoch, h.Epoch, h.Seq, lineRef(ch.line))
	}
}

// heads returns the head of every machine seen.
func (c *checker) heads() map[string]Head {
	out := make(map[string]Head, len(c.chains))
	for m, ch := range c.chains {
		out[m] = ch.head
	}
	return out
}

// idPrefix is the first 64 bits of an id's hash: enough to tell two events
// of one (machine, seq) apart, in an eighth of the memory of the id.
func idPrefix(id string) uint64 {
	var v uint64
	for i := 7; i < 7+16 && i < len(id); i++ {
		v = v<<4 | uint64(hexDigit[id[i]])
	}
	return v
}

var hexDigit = func() (t [256]uint8) {
	for i, c := range "0123456789abcdef" {
		t[c] = uint8(i)
	}
	return t
}()

// seqHistory remembers, for each event of a chain, the first 64 bits of its id
// and its line, in twelve bytes and in fixed chunks: a long journal's
// seqHistory grows without the copies (and twice the memory) of a doubling
// slice.
type seqHistory struct {
	ids   []*[histChunk]uint64
	lines []*[histChunk]uint32
	n     int
}

const histChunk = 1 << 14

func (h *seqHistory) len() int { return h.n }

func (h *seqHistory) add(id uint64, line int) {
	if h.n%histChunk == 0 {
		h.ids = append(h.ids, new([histChunk]uint64))
		h.lines = append(h.lines, new([histChunk]uint32))
	}
	h.ids[h.n/histChunk][h.n%histChunk] = id
	h.lines[h.n/histChunk][h.n%histChunk] = uint32(min(line, math.MaxUint32))
	h.n++
}

func (h *seqHistory) id(i int) uint64 { return h.ids[i/histChunk][i%histChunk] }
func (h *seqHistory) line(i int) int  { return int(h.lines[i/histChunk][i%histChunk]) }
