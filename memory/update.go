package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
)

// ErrNotContinuation is an Add whose events do not continue the journal the
// index reflects; Refresh the index from the whole journal instead.
var ErrNotContinuation = errors.New("memory: the events do not continue the index's journal")

// Add brings the index up to date after events were appended to its
// journal (in file order, each continuing its machine's chain from the
// watermark) and the working memory became wm: it embeds only the new
// events' texts and, when wm changed, the working memory's chunks whose
// text changed. It is the update a running agent makes after each step.
// Nothing changes on an error: the vectors are computed before the index
// is touched. e must be the index's embedder (ErrFingerprint otherwise).
func (x *Index) Add(ctx context.Context, e Embedder, events []journal.Event, wm []byte) (*Report, error) {
	if _, fp, err := Meta(e); err != nil || fp != x.fp {
		return nil, fmt.Errorf("%w: %s, the embedder in hand has another", ErrFingerprint, short(x.fp))
	}
	heads, err := x.advance(events)
	if err != nil {
		return nil, err
	}
	var add []Chunk
	for i := range events {
		if text, ok := TextOf(&events[i]); ok {
			add = append(add, EventChunks(events[i].ID, text)...)
		}
	}
	wmDigest := digest.FromBytes(wm).String()
	var drop []int
	if wmDigest != x.wm.WorkingMemory {
		add, drop = x.workingMemoryDelta(add, wm)
	}
	texts := make([]string, len(add))
	for i := range add {
		texts[i] = add[i].Text
	}
	rep := &Report{Mode: ModeIncremental, Embedded: len(texts)}
	vecs, failed, err := embedAll(ctx, e, x.meta.Dims, texts)
	if err != nil {
		return rep, err
	}
	if len(failed) > 0 {
		rep.Failed = failures(add, seq(len(add)), failed)
		return rep, fmt.Errorf("%w: %d of %d (first: %s)", ErrIncomplete, len(failed), len(texts), rep.Failed[0].Source())
	}
	for _, i := range drop {
		x.kill(i)
	}
	for i, ch := range add {
		x.push(ch, textDigest(ch.Text), vecs[i])
	}
	x.wm.Events += int64(len(events))
	x.wm.Heads = heads
	x.wm.WorkingMemory = wmDigest
	rep.Chunks, rep.Reused = x.live, x.live-len(add)
	return rep, nil
}

// advance checks that events continue the watermark's chains and returns
// the heads after them.
func (x *Index) advance(events []journal.Event) (map[string]Head, error) {
	heads := cloneHeads(x.wm).Heads
	for i := range events {
		ev := &events[i]
		h, ok := heads[ev.Machine]
		if ev.Seq != h.Seq+1 || ok && ev.Prev != h.ID {
			return nil, fmt.Errorf("%w: event %s of %s at seq %d, the index's head is at %d", ErrNotContinuation, short(ev.ID), ev.Machine, ev.Seq, h.Seq)
		}
		heads[ev.Machine] = Head{Seq: ev.Seq, ID: ev.ID}
	}
	return heads, nil
}

// workingMemoryDelta adds to add the chunks of wm that the index lacks
// and returns the live working-memory chunks they replace.
func (x *Index) workingMemoryDelta(add []Chunk, wm []byte) ([]Chunk, []int) {
	keep := map[int]bool{}
	for _, ch := range WorkingMemoryChunks(wm) {
		if i, ok := x.byKey[ch.key()]; ok && x.docs[i].digest == textDigest(ch.Text) {
			keep[i] = true
			continue
		}
		add = append(add, ch)
	}
	var drop []int
	for _, i := range x.wmDocs {
		if !keep[i] {
			drop = append(drop, i)
		}
	}
	return add, drop
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
