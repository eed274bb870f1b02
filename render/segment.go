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

// callRef is one tool call of a step and the result paired with it. It
// holds no pointer and no text: the tool name is an index into the
// segmentation's distinct names, and the call ID is read again from the
// call's body when a kept unit needs it, so a long journal's calls cost
// twelve bytes each.
type callRef struct {
	event  int32 // index of the tool_call event
	result int32 // index of the paired tool_result event, or -1
	name   int32 // index of its raw tool name in segmentation.names
}

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
}

// segmentation is the outcome of the first pass over a journal.
type segmentation struct {
	units      []unit
	stepEvents []int32            // arena of the steps' event indices
	calls      []callRef          // arena of the steps' calls
	producers  []journal.Producer // distinct producers, in order of first use
	usage      []int32            // indices of usage events, in order
	usageOf    []int32            // for each, its raw producer in usageProducers, or -1
	// usageProducers are the distinct raw producers of usage events,
	// usageRaws their index.
	usageProducers [][]byte
	usageRaws      map[string]int32
	orphans        []string // call IDs of results with no call to pair with
	duplicates     []string // call IDs of second results for one call
	malformed      []int32  // events whose body could not be read
	unknown        int      // events of kinds this release does not know
	// toolNames holds every tool name a call uses, raw, with its index in
	// names; convEvents counts the events of all user and step units:
	// together they bound the digest of any cut without another pass.
	toolNames  map[string]int32
	names      []string
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
// fields of each body that pairing and step boundaries need. It copies the
// few raw values it keeps (call IDs, tool names, steps) into an arena, so
// it never holds a body: the events may stream past.
type segmenter struct {
	seg     segmentation
	arena   arena
	n       int32 // events added
	prodBuf []byte
	// stepRaw is the raw step of the open step (nil until one of its
	// events names one) and openIDs the raw IDs of its calls, copies in
	// stepBuf, which the next step reuses.
	stepRaw []byte
	openIDs [][]byte
	stepBuf []byte
	cur     int // index in seg.units of the open step, or -1
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
	s := newSegmenter(len(events))
	for i := range events {
		s.add(events[i].Kind, events[i].Body)
	}
	return s.finish()
}

// newSegmenter returns a segmenter sized for about n events.
func newSegmenter(n int) *segmenter {
	s := &segmenter{cur: -1, prodIndex: map[journal.Producer]int32{}}
	s.seg.units = make([]unit, 0, n/3+1)
	s.seg.stepEvents = make([]int32, 0, n/2+1)
	s.seg.calls = make([]callRef, 0, n/4+1)
	s.seg.toolNames = map[string]int32{}
	s.seg.usageRaws = map[string]int32{}
	return s
}

// finish closes the open step and returns the segmentation.
func (s *segmenter) finish() segmentation {
	s.closeStep()
	for _, u := range s.seg.units {
		if u.kind != unitInstr {
			s.seg.convEvents += u.size()
		}
	}
	return s.seg
}

// add segments the next event, given its kind and body.
func (s *segmenter) add(kind journal.Kind, body []byte) {
	s.addHeader(kind, headerOf(kind, body))
}

// headerOf reads what segmentation needs of a body: the header of an
// assistant-side event, the call_id of a result (in callID), the producer
// of a usage record; ok is false for a body it cannot read.
func headerOf(kind journal.Kind, body []byte) (h header) {
	switch kind {
	case journal.KindAssistant, journal.KindReasoning, journal.KindToolCall:
		h, h.ok = readHeader(kind, body)
	case journal.KindToolResult:
		f := [1]field{{key: "call_id"}}
		h.ok = scanFields(body, f[:]) && validString(f[0].raw)
		h.callID = f[0].raw
	case journal.KindUsage:
		f := [1]field{{key: "producer"}}
		h.ok = scanFields(body, f[:]) && f[0].raw != nil
		h.producer = f[0].raw
	}
	return h
}

// addHeader segments the next event, given its kind and headerOf(body).
func (s *segmenter) addHeader(kind journal.Kind, h header) {
	i := s.n
	s.n++
	switch kind {
	case journal.KindInstruction:
		s.instruction(i)
	case journal.KindUser:
		s.closeStep()
		s.seg.units = append(s.seg.units, unit{kind: unitUser, event: i})
	case journal.KindAssistant, journal.KindReasoning, journal.KindToolCall:
		s.assistantSide(i, kind, h)
	case journal.KindToolResult:
		s.result(i, h)
	case journal.KindUsage:
		s.usage(i, h)
	default:
		if !kind.Known() {
			s.seg.unknown++
		}
	}
}

// usage records a usage event with its raw producer, interned, which is
// what calibration filters on before it reads a body.
func (s *segmenter) usage(i int32, h header) {
	k := int32(-1)
	if h.ok {
		var ok bool
		if k, ok = s.seg.usageRaws[string(h.producer)]; !ok {
			k = int32(len(s.seg.usageProducers))
			s.seg.usageRaws[string(h.producer)] = k
			s.seg.usageProducers = append(s.seg.usageProducers, s.arena.copy(h.producer))
		}
	}
	s.seg.usage = append(s.seg.usage, i)
	s.seg.usageOf = append(s.seg.usageOf, k)
}

// arena holds copies of short raw values in chunks that never move, so
// the copies stay valid as it grows and cost no allocation each.
type arena struct{ chunk []byte }

// copy returns a copy of b (nil for nil).
func (a *arena) copy(b []byte) []byte {
	if b == nil {
		return nil
	}
	if len(b) > cap(a.chunk)-len(a.chunk) {
		a.chunk = make([]byte, 0, max(64<<10, len(b)))
	}
	n := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	return a.chunk[n:len(a.chunk):len(a.chunk)]
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
	ok                           bool
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
	s.prodRaw, s.prod = nil, k
	if raw != nil {
		s.prodBuf = append(s.prodBuf[:0], raw...)
		s.prodRaw = s.prodBuf
	}
	return k, true
}

func (s *segmenter) assistantSide(i int32, kind journal.Kind, h header) {
	ok := h.ok
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
		s.stepRaw, s.openIDs, s.stepBuf = nil, s.openIDs[:0], s.stepBuf[:0]
	}
	u := &s.seg.units[s.cur]
	s.seg.stepEvents = append(s.seg.stepEvents, i)
	u.evEnd++
	if rawEquals(s.stepRaw, "") && !rawEquals(h.step, "") {
		s.stepRaw = s.keep(h.step)
	}
	if kind == journal.KindToolCall {
		s.seg.calls = append(s.seg.calls, callRef{event: i, result: -1, name: s.toolName(h.name)})
		s.openIDs = append(s.openIDs, s.keep(h.callID))
		u.cEnd++
	}
}

// keep copies a raw value of the open step into stepBuf (nil stays nil).
func (s *segmenter) keep(raw []byte) []byte {
	if raw == nil {
		return nil
	}
	n := len(s.stepBuf)
	s.stepBuf = append(s.stepBuf, raw...)
	return s.stepBuf[n:len(s.stepBuf):len(s.stepBuf)]
}

// toolName returns the index of a raw tool name, adding it on first use.
func (s *segmenter) toolName(raw []byte) int32 {
	k, ok := s.seg.toolNames[string(raw)]
	if !ok {
		k = int32(len(s.seg.names))
		s.seg.toolNames[string(raw)] = k
		s.seg.names = append(s.seg.names, string(raw))
	}
	return k
}

// callName returns the tool name of a call, decoded.
func (g *segmentation) callName(c *callRef) string {
	s, _ := rawString([]byte(g.names[c.name]))
	return s
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
	case !rawEquals(s.stepRaw, "") && !rawEquals(step, "") && !rawSame(step, s.stepRaw):
		return true
	}
	return false
}

func (s *segmenter) result(i int32, h header) {
	if !h.ok {
		s.seg.malformed = append(s.seg.malformed, i)
		return
	}
	raw := h.callID
	if s.cur >= 0 {
		matched := false
		calls := s.seg.callsOf(&s.seg.units[s.cur])
		for k := range calls {
			if !rawSame(raw, s.openIDs[k]) {
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
