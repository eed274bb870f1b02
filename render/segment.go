package render

import (
	"bytes"

	"github.com/agentcapsule/capsule/journal"
)

// unitKind says what a unit of the conversation is.
type unitKind uint8

const (
	unitInstr unitKind = iota // one instruction event
	unitUser                  // one user message
	unitStep                  // one assistant generation, with the results of its calls
)

// callRef is one tool call of a step and the result paired with it. The
// ID and name stay raw JSON (aliasing the event body) until a kept unit
// needs them, so the linear pass allocates nothing per call.
type callRef struct {
	event   int32 // index of the tool_call event
	result  int32 // index of the paired tool_result event, or -1
	idRaw   []byte
	nameRaw []byte
}

func (c *callRef) id() string   { s, _ := rawString(c.idRaw); return s }
func (c *callRef) name() string { s, _ := rawString(c.nameRaw); return s }

// unit is the smallest piece the window fitter keeps or drops. A step
// with calls carries all its results: a call and its result are never
// separated. A step's events and calls are ranges of the segmentation's
// arenas.
type unit struct {
	kind           unitKind
	event          int32 // instr/user: the event
	evStart, evEnd int32 // step: its assistant-side events, in seg.stepEvents
	cStart, cEnd   int32 // step: its calls, in seg.calls
	results        int32 // number of results paired with calls
	producer       int32 // step: index in seg.producers
	stepRaw        []byte
}

// segmentation is the outcome of the first pass over a journal.
type segmentation struct {
	units      []unit
	stepEvents []int32            // arena of the steps' event indices
	calls      []callRef          // arena of the steps' calls
	producers  []journal.Producer // distinct producers, in order of first use
	usage      []int32            // indices of usage events, in order
	orphans    []string           // call IDs of results with no call to pair with
	duplicates []string           // call IDs of second results for one call
	malformed  []int32            // events whose body could not be read
	unknown    int                // events of kinds this release does not know
	// toolNames holds every tool name a call uses, raw, and convEvents
	// the events of all user and step units: together they bound the
	// digest of any cut without another pass.
	toolNames  map[string]bool
	convEvents int
}

// eventsOf returns a step's assistant-side events in journal order, or
// the one event of another unit.
func (g *segmentation) eventsOf(u *unit) []int32 {
	if u.kind != unitStep {
		return []int32{u.event}
	}
	return g.stepEvents[u.evStart:u.evEnd]
}

// callsOf returns a step's calls in order.
func (g *segmentation) callsOf(u *unit) []callRef {
	if u.kind != unitStep {
		return nil
	}
	return g.calls[u.cStart:u.cEnd]
}

// size is the number of journal events the unit accounts for.
func (u *unit) size() int {
	if u.kind != unitStep {
		return 1
	}
	return int(u.evEnd-u.evStart) + int(u.results)
}

// segmenter builds units in one forward pass, reading only the few header
// fields of each body that pairing and step boundaries need.
type segmenter struct {
	events []journal.Event
	seg    segmentation
	cur    int // index in seg.units of the open step, or -1
	// deferred holds instructions that arrived while the open step still
	// waited for results; they are placed after that step's results so a
	// call and its results stay adjacent.
	deferred []unit
	// prodRaw and prod cache the last producer decoded, prod being its
	// index in seg.producers.
	prodRaw   []byte
	prod      int32
	prodIndex map[journal.Producer]int32
}

// segment splits events into units. events must be in the journal's total
// order; the IDs and chains of the events are not used.
func segment(events []journal.Event) segmentation {
	s := &segmenter{events: events, cur: -1, prodIndex: map[journal.Producer]int32{}}
	s.seg.units = make([]unit, 0, len(events)/3+1)
	s.seg.stepEvents = make([]int32, 0, len(events)/2+1)
	s.seg.calls = make([]callRef, 0, len(events)/4+1)
	s.seg.toolNames = map[string]bool{}
	for i := range events {
		s.add(int32(i))
	}
	s.closeStep()
	for _, u := range s.seg.units {
		if u.kind != unitInstr {
			s.seg.convEvents += u.size()
		}
	}
	return s.seg
}

func (s *segmenter) add(i int32) {
	e := &s.events[i]
	switch e.Kind {
	case journal.KindInstruction:
		s.instruction(i)
	case journal.KindUser:
		s.closeStep()
		s.seg.units = append(s.seg.units, unit{kind: unitUser, event: i})
	case journal.KindAssistant, journal.KindReasoning, journal.KindToolCall:
		s.assistantSide(i)
	case journal.KindToolResult:
		s.result(i)
	case journal.KindUsage:
		s.seg.usage = append(s.seg.usage, i)
	default:
		if !e.Kind.Known() {
			s.seg.unknown++
		}
	}
}

func (s *segmenter) instruction(i int32) {
	u := unit{kind: unitInstr, event: i}
	if s.cur >= 0 && s.pending() {
		s.deferred = append(s.deferred, u)
		return
	}
	s.closeStep()
	s.seg.units = append(s.seg.units, u)
}

// pending reports whether the open step has a call still waiting for its result.
func (s *segmenter) pending() bool {
	for _, c := range s.seg.callsOf(&s.seg.units[s.cur]) {
		if c.result < 0 {
			return true
		}
	}
	return false
}

// closeStep ends the open step (its missing results are synthesized later)
// and places the instructions deferred behind it.
func (s *segmenter) closeStep() {
	s.cur = -1
	s.seg.units = append(s.seg.units, s.deferred...)
	s.deferred = s.deferred[:0]
}

// header holds the raw fields of an assistant-side body that
// segmentation needs; they are decoded only when used, so most events
// allocate nothing. (A step's stop reason matters only if the step is
// kept, so it is read when the step is built.)
type header struct {
	step, producer, callID, name []byte
}

func readHeader(kind journal.Kind, body []byte) (header, bool) {
	f := [4]field{{key: "step"}, {key: "producer"}, {key: "call_id"}, {key: "name"}}
	want := f[:2]
	if kind == journal.KindToolCall {
		want = f[:4]
	}
	if !scanFields(body, want) {
		return header{}, false
	}
	h := header{step: f[0].raw, producer: f[1].raw, callID: f[2].raw, name: f[3].raw}
	return h, validString(h.step) && validString(h.callID) && validString(h.name)
}

func readProducer(raw []byte) (journal.Producer, bool) {
	if raw == nil {
		return journal.Producer{}, true
	}
	f := [3]field{{key: "provider"}, {key: "api"}, {key: "model"}}
	if !scanFields(raw, f[:]) {
		return journal.Producer{}, false
	}
	var p journal.Producer
	var ok1, ok2, ok3 bool
	p.Provider, ok1 = rawString(f[0].raw)
	p.API, ok2 = rawString(f[1].raw)
	p.Model, ok3 = rawString(f[2].raw)
	return p, ok1 && ok2 && ok3
}

// producer decodes a raw producer into its index in seg.producers,
// reusing the last one when the bytes are the same (consecutive events
// nearly always share their producer).
func (s *segmenter) producer(raw []byte) (int32, bool) {
	if s.prodRaw != nil && bytes.Equal(raw, s.prodRaw) {
		return s.prod, true
	}
	p, ok := readProducer(raw)
	if !ok {
		return 0, false
	}
	k, seen := s.prodIndex[p]
	if !seen {
		k = int32(len(s.seg.producers))
		s.seg.producers = append(s.seg.producers, p)
		s.prodIndex[p] = k
	}
	s.prodRaw, s.prod = raw, k
	return k, true
}

func (s *segmenter) assistantSide(i int32) {
	e := &s.events[i]
	h, ok := readHeader(e.Kind, e.Body)
	var prod int32
	if ok {
		prod, ok = s.producer(h.producer)
	}
	if !ok {
		s.seg.malformed = append(s.seg.malformed, i)
		return
	}
	if s.cur < 0 || s.startsNewStep(prod, h.step) {
		s.closeStep()
		n := int32(len(s.seg.stepEvents))
		c := int32(len(s.seg.calls))
		s.seg.units = append(s.seg.units, unit{kind: unitStep, producer: prod, evStart: n, evEnd: n, cStart: c, cEnd: c})
		s.cur = len(s.seg.units) - 1
	}
	u := &s.seg.units[s.cur]
	s.seg.stepEvents = append(s.seg.stepEvents, i)
	u.evEnd++
	if rawEquals(u.stepRaw, "") {
		u.stepRaw = h.step
	}
	if e.Kind == journal.KindToolCall {
		s.seg.calls = append(s.seg.calls, callRef{event: i, result: -1, idRaw: h.callID, nameRaw: h.name})
		u.cEnd++
		if !s.seg.toolNames[string(h.name)] {
			s.seg.toolNames[string(h.name)] = true
		}
	}
}

// validString reports whether raw is absent, null or a JSON string that
// decodes; plain strings are checked without allocating.
func validString(raw []byte) bool {
	if raw == nil || plainString(raw) {
		return true
	}
	_, ok := rawString(raw)
	return ok
}

// startsNewStep reports whether an assistant-side event of producer p (an
// index) and
// raw step begins a new generation rather than continuing the open one.
func (s *segmenter) startsNewStep(p int32, step []byte) bool {
	u := &s.seg.units[s.cur]
	switch {
	case u.results > 0:
		return true // results came back: what follows is the next generation
	case p != u.producer:
		return true
	case !rawEquals(u.stepRaw, "") && !rawEquals(step, "") && !rawSame(step, u.stepRaw):
		return true
	}
	return false
}

func (s *segmenter) result(i int32) {
	f := [1]field{{key: "call_id"}}
	if !scanFields(s.events[i].Body, f[:]) || !validString(f[0].raw) {
		s.seg.malformed = append(s.seg.malformed, i)
		return
	}
	raw := f[0].raw
	if s.cur >= 0 {
		matched := false
		calls := s.seg.callsOf(&s.seg.units[s.cur])
		for k := range calls {
			if !rawSame(raw, calls[k].idRaw) {
				continue
			}
			matched = true
			if calls[k].result < 0 {
				calls[k].result = i
				s.seg.units[s.cur].results++
				return
			}
		}
		if matched {
			id, _ := rawString(raw)
			s.seg.duplicates = append(s.seg.duplicates, id)
			return
		}
	}
	id, _ := rawString(raw)
	s.seg.orphans = append(s.seg.orphans, id)
}
