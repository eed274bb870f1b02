package render

import (
	"errors"
	"fmt"
	"io"

	"github.com/agentcapsule/capsule/journal"
)

// source is how a render reads its journal once segmented: the kind of any
// event and the body of the ones it builds, by index in total order.
type source interface {
	len() int
	kind(i int32) journal.Kind
	body(i int32) []byte
}

// memSource is a journal held in memory.
type memSource []journal.Event

func (m memSource) len() int                  { return len(m) }
func (m memSource) kind(i int32) journal.Kind { return m[i].Kind }
func (m memSource) body(i int32) []byte       { return m[i].Body }

// ErrOrder is returned by Index.Add for an event that does not come after
// the one before it in the journal's total order: such a journal must be
// read whole and sorted (journal.Sort) before NewPlan.
var ErrOrder = errors.New("render: events not in total order")

// Index is a journal the renderer read once, as it streamed by: its
// segmentation (units, pairing of calls and results, the tools used, the
// usage records) and where each event's body sits in a file, but no
// bodies. A Plan made from it reads from the file only the bodies of the
// units it keeps and of the few events the digest and calibration need,
// so rendering a journal of any length holds the window and a dozen bytes
// per event, never the journal. The plan is the one NewPlan makes from the
// same events.
type Index struct {
	r    io.ReaderAt
	seg  *segmenter
	locs chunks[loc] // of each event: its kind and where its body is
	last journal.Event
	done *segmentation
	err  error // the first read of a body that failed
}

const unknownKind = 0xff

// loc is where an event's body sits in the file, and the event's kind.
type loc struct {
	at   int64
	size uint32
	kind uint8 // index in journal.KnownKinds, or unknownKind
}

// chunks is a slice that grows by fixed chunks instead of doubling, so a
// long journal's index costs its size, not twice it, while it grows.
type chunks[T any] struct {
	c [][]T
	n int
}

const chunkLen = 1 << 14

func (c *chunks[T]) add(v T) {
	if c.n%chunkLen == 0 {
		c.c = append(c.c, make([]T, 0, chunkLen))
	}
	k := len(c.c) - 1
	c.c[k] = append(c.c[k], v)
	c.n++
}

func (c *chunks[T]) at(i int) *T { return &c.c[i/chunkLen][i%chunkLen] }

// NewIndex returns an empty index of a journal whose bytes r reads.
func NewIndex(r io.ReaderAt) *Index {
	return &Index{r: r, seg: newSegmenter(0)}
}

// Header is what the renderer reads of an event's body to segment a
// journal. ReadHeader finds it; it may run on any goroutine, ahead of
// AddHeader (see journal.EachWith), and aliases the body.
type Header struct{ h header }

// ReadHeader reads the header of e's body.
func ReadHeader(e *journal.Event) Header { return Header{headerOf(e.Kind, e.Body)} }

// Add appends the next event, whose body starts at offset at in the
// reader (journal.Pos.Body). e's body is read now and not kept, so it may
// alias a buffer the caller reuses. Events must come in total order (as a
// verified journal's lines are), else Add returns ErrOrder.
func (x *Index) Add(e *journal.Event, at int64) error {
	return x.AddHeader(e, at, ReadHeader(e))
}

// AddHeader is Add for an event whose header the caller read already
// (ReadHeader of the same event, whose body must still be intact).
func (x *Index) AddHeader(e *journal.Event, at int64, h Header) error {
	if x.done != nil {
		return errors.New("render: Index.Add after Plan")
	}
	if x.locs.n > 0 && journal.Compare(&x.last, e) > 0 {
		return fmt.Errorf("%w: (clock %d, machine %s, seq %d) after (clock %d, machine %s, seq %d)",
			ErrOrder, e.Clock, e.Machine, e.Seq, x.last.Clock, x.last.Machine, x.last.Seq)
	}
	x.last = journal.Event{Clock: e.Clock, Machine: e.Machine, Seq: e.Seq, ID: e.ID}
	x.seg.addHeader(e.Kind, h.h)
	x.locs.add(loc{at: at, size: uint32(len(e.Body)), kind: kindCode(e.Kind)})
	return nil
}

func kindCode(k journal.Kind) uint8 {
	for i, x := range journal.KnownKinds {
		if x == k {
			return uint8(i)
		}
	}
	return unknownKind
}

// Len returns the number of events added.
func (x *Index) Len() int { return x.locs.n }

// Plan repairs, filters and fits the indexed journal for one target, as
// NewPlan does for the same events. It may be called for several targets;
// no event may be added after it. A body that cannot be read from the file
// fails the plan.
func (x *Index) Plan(t Target) (*Plan, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if x.done == nil {
		seg := x.seg.finish()
		x.done, x.seg = &seg, nil
	}
	p, err := newPlan(x, *x.done, t)
	if x.err != nil {
		return nil, x.err
	}
	return p, err
}

func (x *Index) len() int { return x.locs.n }

func (x *Index) kind(i int32) journal.Kind {
	if c := x.locs.at(int(i)).kind; c != unknownKind {
		return journal.KnownKinds[c]
	}
	return "" // never asked: only known kinds make units
}

func (x *Index) body(i int32) []byte {
	l := x.locs.at(int(i))
	b := make([]byte, l.size)
	if n, err := x.r.ReadAt(b, l.at); n < len(b) && x.err == nil {
		x.err = fmt.Errorf("render: read the body of event %d: %w", i, err)
	}
	return b
}
