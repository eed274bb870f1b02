package memory

import (
	"fmt"
	"io"
	"maps"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
)

// Head is a machine's newest event as the watermark records it.
type Head struct {
	Seq uint64 `json:"seq"`
	ID  string `json:"id"`
}

// Watermark is the source an index reflects (FORMAT §11.7.2): the
// journal's event count and heads, and the working memory's digest.
type Watermark struct {
	Events        int64
	Heads         map[string]Head
	WorkingMemory string
}

// Equal reports whether two watermarks name the same source.
func (w Watermark) Equal(v Watermark) bool {
	return w.Events == v.Events && w.WorkingMemory == v.WorkingMemory && maps.Equal(w.Heads, v.Heads)
}

// EventText is the indexed text of one journal event.
type EventText struct {
	ID      string
	Machine string
	Seq     uint64
	Text    string
}

// Corpus is what an index is built from: the text of every indexed event
// of a journal, each machine's chain of ids (to tell whether a journal only
// grew since a watermark), and the working memory. The zero value is an
// empty journal with an empty working memory.
type Corpus struct {
	events int64
	chains map[string][]string // a machine's event ids, by seq - 1
	broken bool                // some machine's seqs were not 1, 2, 3…
	texts  []EventText
	wm     []byte
}

// NewCorpus returns the corpus of events (in file order) and the working memory wm.
func NewCorpus(events []journal.Event, wm []byte) *Corpus {
	c := &Corpus{}
	for i := range events {
		c.Add(&events[i])
	}
	c.SetWorkingMemory(wm)
	return c
}

// ReadCorpus streams a journal (memory/timeline_events.jsonl) from r and
// returns its corpus with working memory wm. A line that does not parse is
// an error (journal.Each).
func ReadCorpus(r io.Reader, wm []byte) (*Corpus, error) {
	c := &Corpus{}
	prep := func(e *journal.Event) *EventText {
		if text, ok := TextOf(e); ok {
			return &EventText{Text: text}
		}
		return nil
	}
	err := journal.EachWith(r, prep, func(e *journal.Event, _ journal.Pos, t *EventText) error {
		c.addID(e)
		if t != nil {
			c.texts = append(c.texts, EventText{ID: e.ID, Machine: e.Machine, Seq: e.Seq, Text: t.Text})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("memory: read journal: %w", err)
	}
	c.SetWorkingMemory(wm)
	return c, nil
}

// Add appends one event of the journal.
func (c *Corpus) Add(e *journal.Event) {
	c.addID(e)
	if text, ok := TextOf(e); ok {
		c.texts = append(c.texts, EventText{ID: e.ID, Machine: e.Machine, Seq: e.Seq, Text: text})
	}
}

func (c *Corpus) addID(e *journal.Event) {
	if c.chains == nil {
		c.chains = map[string][]string{}
	}
	ch := c.chains[e.Machine]
	if e.Seq != uint64(len(ch))+1 {
		c.broken = true
	}
	c.chains[e.Machine] = append(ch, e.ID)
	c.events++
}

// SetWorkingMemory replaces the working memory.
func (c *Corpus) SetWorkingMemory(wm []byte) { c.wm = append([]byte(nil), wm...) }

// Texts returns the indexed events' texts, in file order.
func (c *Corpus) Texts() []EventText { return c.texts }

// Watermark returns the source this corpus is.
func (c *Corpus) Watermark() Watermark {
	w := Watermark{Events: c.events, Heads: map[string]Head{}, WorkingMemory: digest.FromBytes(c.wm).String()}
	for m, ch := range c.chains {
		w.Heads[m] = Head{Seq: uint64(len(ch)), ID: ch[len(ch)-1]}
	}
	return w
}

// grewFrom reports whether this journal holds every event the watermark
// w reflects, at the positions w names: each of w's heads is the event at
// its machine's seq here, and w's count is the sum of its heads' seqs.
// Hash chains make a head stand for every earlier event of its machine.
func (c *Corpus) grewFrom(w Watermark) bool {
	if c.broken {
		return false
	}
	var n int64
	for m, h := range w.Heads {
		ch := c.chains[m]
		if h.Seq < 1 || h.Seq > uint64(len(ch)) || ch[h.Seq-1] != h.ID {
			return false
		}
		n += int64(h.Seq)
	}
	return n == w.Events && n <= c.events
}
