package journal

import (
	"fmt"
	"maps"

	"github.com/agentcapsule/capsule/digest"
)

// Head is the newest event of one machine: what the next event of that
// machine must follow (seq+1, prev = ID, a greater clock, no lower epoch).
type Head struct {
	Seq   uint64 `json:"seq"`
	ID    string `json:"id"`
	Clock uint64 `json:"clock"`
	Epoch uint64 `json:"epoch"`
}

// Summary records a committed journal: how many events and bytes, the
// digest of those bytes, and each machine's head. The manifest stores it
// (docs/FORMAT.md §7.7); bytes past Bytes are the uncommitted tail, which
// VerifyTail checks by chain.
type Summary struct {
	Events int64           `json:"events"`
	Bytes  int64           `json:"bytes"`
	Digest digest.Digest   `json:"digest"`
	Heads  map[string]Head `json:"heads"`
}

// Clock returns the largest clock of the committed journal, 0 when empty.
func (s Summary) Clock() uint64 {
	var c uint64
	for _, h := range s.Heads {
		c = max(c, h.Clock)
	}
	return c
}

// Validate checks the form of a summary read from a manifest.
func (s Summary) Validate() error {
	if s.Events < 0 || s.Bytes < 0 || s.Events > s.Bytes {
		return fmt.Errorf("journal summary: %d events in %d bytes is impossible", s.Events, s.Bytes)
	}
	if err := s.Digest.Validate(); err != nil {
		return fmt.Errorf("journal summary: %w", err)
	}
	var seqs uint64
	for m, h := range s.Heads {
		if err := checkMachine(m); err != nil {
			return fmt.Errorf("journal summary: %w", err)
		}
		if h.Seq < 1 || h.Clock < h.Seq || !isDigest(h.ID) {
			return fmt.Errorf("journal summary: head of %s is not a valid head (seq %d, clock %d, id %q)", m, h.Seq, h.Clock, clip(h.ID))
		}
		seqs += h.Seq
	}
	if seqs != uint64(s.Events) {
		return fmt.Errorf("journal summary: heads add up to %d events, summary says %d", seqs, s.Events)
	}
	return nil
}

// Equal reports whether two summaries record the same journal.
func (s Summary) Equal(t Summary) bool {
	return s.Events == t.Events && s.Bytes == t.Bytes && s.Digest == t.Digest && maps.Equal(s.Heads, t.Heads)
}

// Summarizer computes a Summary as events are appended in file order.
// The zero value is not ready; use NewSummarizer.
type Summarizer struct {
	h    *digest.Hasher
	s    Summary
	line []byte
}

// NewSummarizer returns a Summarizer of the empty journal.
func NewSummarizer() *Summarizer {
	return &Summarizer{h: digest.NewHasher(), s: Summary{Heads: map[string]Head{}}}
}

// NewSummarizerFrom continues from s, a summary of bytes the caller has
// already written to h; the Summarizer goes on hashing into h. A reader that
// streams a journal through h (and counts the events itself) avoids
// encoding every line again.
func NewSummarizerFrom(s Summary, h *digest.Hasher) *Summarizer {
	s.Heads = maps.Clone(s.Heads)
	if s.Heads == nil {
		s.Heads = map[string]Head{}
	}
	return &Summarizer{h: h, s: s}
}

// Add appends one event, hashing its line and newline.
func (z *Summarizer) Add(e *Event) {
	z.line = append(AppendEncode(z.line[:0], e), '\n')
	z.AddLine(e, z.line)
}

// AddLine appends an event whose encoded line (with its newline) the caller
// already has, saving the encoding.
func (z *Summarizer) AddLine(e *Event, line []byte) {
	z.h.Write(line)
	z.s.Events++
	z.s.Bytes += int64(len(line))
	if h, ok := z.s.Heads[e.Machine]; !ok || e.Seq > h.Seq {
		z.s.Heads[e.Machine] = Head{Seq: e.Seq, ID: e.ID, Clock: e.Clock, Epoch: e.Epoch}
	}
}

// Head returns the head of machine m so far.
func (z *Summarizer) Head(m string) (Head, bool) {
	h, ok := z.s.Heads[m]
	return h, ok
}

// Summary returns the summary of everything added so far.
func (z *Summarizer) Summary() Summary {
	s := z.s
	s.Digest = z.h.Digest()
	s.Heads = maps.Clone(z.s.Heads)
	return s
}

// Summarize returns the summary of a journal holding events in this order.
func Summarize(events []Event) Summary {
	z := NewSummarizer()
	for i := range events {
		z.Add(&events[i])
	}
	return z.Summary()
}
