package logfile

import (
	"bytes"
	"fmt"
	"time"

	"github.com/agentcapsule/capsule/journal"
)

// Group commit. An appender queues its request; if no one is writing, it
// becomes the leader: it takes every queued request, seals them in order,
// writes them with one write and one fsync, wakes their callers, and repeats
// while requests keep arriving. Requests that queue while a batch is being
// synced ride in the next batch, so N concurrent appenders pay for about
// one fsync per round instead of N.

// submit queues r and returns once r is durable or failed. Followers sleep
// on their own channel, so a finished batch wakes only its own callers.
func (l *Log) submit(r *request) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		r.err = ErrClosed
		return
	}
	l.pending = append(l.pending, r)
	select {
	case l.arrived <- struct{}{}:
	default:
	}
	if l.leading {
		r.done = make(chan struct{})
		l.mu.Unlock()
		<-r.done
		return
	}
	l.leading = true
	for len(l.pending) > 0 {
		l.awaitCompany()
		batch := l.pending
		l.pending = nil
		l.mu.Unlock()
		start := time.Now()
		l.writeBatch(batch)
		l.mu.Lock()
		l.lastBatch, l.lastSync = len(batch), time.Since(start)
	}
	l.leading = false
	l.cond.Broadcast() // for Close
	l.mu.Unlock()
}

// Commit delay. Without it, N concurrent appenders settle into two groups
// that alternate: while one group's batch syncs, the other queues, so each
// fsync carries about N/2 events. So a leader that finds fewer requests
// queued than the previous batch held waits briefly for the appenders that
// batch released to come back, at most half the previous sync's duration
// and never more than maxDelay. A lone appender never waits: its previous
// batch held one request, its own.
const maxDelay = 2 * time.Millisecond

// awaitCompany waits for the expected requests to queue. Called and returns
// with l.mu held.
func (l *Log) awaitCompany() {
	want, wait := l.lastBatch, min(l.lastSync/2, maxDelay)
	if len(l.pending) >= want || wait <= 0 {
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for len(l.pending) < want {
		l.mu.Unlock()
		select {
		case <-l.arrived:
		case <-timer.C:
			l.mu.Lock()
			return
		}
		l.mu.Lock()
	}
}

// batchState is the log's state as a batch extends it before it is durable.
type batchState struct {
	base   *journal.Summarizer     // the durable state; read only while the batch is built
	heads  map[string]journal.Head // heads the batch has moved
	clock  uint64
	epoch  uint64
	last   journal.Event
	buf    []byte
	ends   []int // end of each sealed event's line in buf
	events []journal.Event
	owners []*request
}

// writeBatch seals, writes and syncs one batch. It runs without l.mu; only
// the leader touches the file and the durable state.
func (l *Log) writeBatch(batch []*request) {
	l.mu.Lock()
	b := &batchState{
		base: l.state.sum, heads: map[string]journal.Head{}, clock: l.clockLocked(), epoch: l.epoch,
		last: l.state.last,
	}
	broken := l.broken
	l.mu.Unlock()
	if broken != nil {
		finish(batch, broken)
		return
	}
	for _, r := range batch {
		if r.sealed != nil {
			r.err = b.importEvents(l, r)
		} else {
			r.err = b.append(r)
		}
	}
	err := l.persist(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		for _, r := range b.owners {
			if r.err == nil {
				r.err = err
			}
		}
	} else {
		l.commitLocked(b)
	}
	for _, r := range batch {
		if r.err != nil {
			r.n = 0
		}
		if r.done != nil {
			close(r.done)
		}
	}
}

func finish(batch []*request, err error) {
	for _, r := range batch {
		r.err = err
	}
}

// clockLocked returns the largest clock in the journal.
func (l *Log) clockLocked() uint64 { return l.state.last.Clock }

// append seals the new events of r (one, or an AppendAll's several, all
// sealed before any is added, so that the batch holds all or none).
func (b *batchState) append(r *request) error {
	if r.epoch < b.epoch {
		return &journal.StaleEpochError{Epoch: r.epoch, Holder: b.epoch}
	}
	h := b.head(r.machine)
	clock := b.clock
	seal := func(kind journal.Kind, body []byte) (journal.Event, error) {
		e := journal.Event{
			Machine: r.machine, Seq: h.Seq + 1, Prev: h.ID, Clock: clock + 1,
			Epoch: r.epoch, V: journal.SchemaVersion, Time: r.time, Kind: kind, Body: body,
		}
		if err := journal.Seal(&e); err != nil {
			return e, err
		}
		h, clock = journal.Head{Seq: e.Seq, ID: e.ID, Clock: e.Clock, Epoch: e.Epoch}, e.Clock
		return e, nil
	}
	e, err := seal(r.kind, r.body)
	if err != nil {
		return err
	}
	events := []journal.Event{e}
	for _, p := range r.more {
		e, err := seal(p.kind, p.body)
		if err != nil {
			return err
		}
		events = append(events, e)
	}
	r.event = events[0]
	if r.more != nil {
		r.events = events
	}
	for _, e := range events {
		b.add(e, r)
	}
	return nil
}

// head returns machine m's head as the batch has it.
func (b *batchState) head(m string) journal.Head {
	if h, ok := b.heads[m]; ok {
		return h
	}
	h, _ := b.base.Head(m)
	return h
}

// allHeads returns every head as the batch has it.
func (b *batchState) allHeads() map[string]journal.Head {
	out := b.base.Summary().Heads
	for m, h := range b.heads {
		out[m] = h
	}
	return out
}

// add puts a sealed event into the batch and advances the state.
func (b *batchState) add(e journal.Event, r *request) {
	if b.buf == nil {
		b.buf = make([]byte, 0, 2*len(e.Body)+512)
	}
	b.buf = append(journal.AppendEncode(b.buf, &e), '\n')
	b.ends = append(b.ends, len(b.buf))
	b.events = append(b.events, e)
	b.owners = append(b.owners, r)
	b.heads[e.Machine] = journal.Head{Seq: e.Seq, ID: e.ID, Clock: e.Clock, Epoch: e.Epoch}
	b.clock = max(b.clock, e.Clock)
	b.epoch = max(b.epoch, e.Epoch) // the fence rises with the highest epoch written
	b.last = envelope(e)
	r.n++
}

// persist writes the batch and syncs it. On failure it cuts the file back to
// its old size, so no caller's event is half there; if even that fails, the
// log is broken until reopened.
func (l *Log) persist(b *batchState) error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := l.f.Write(b.buf)
	if err == nil {
		err = l.f.Sync()
	}
	if err == nil {
		return nil
	}
	if terr := l.undo(); terr != nil {
		l.mu.Lock()
		l.broken = fmt.Errorf("%w: %v (undo: %v)", ErrBroken, err, terr)
		l.mu.Unlock()
	}
	return err
}

func (l *Log) undo() error {
	if err := l.f.Truncate(l.state.size); err != nil {
		return err
	}
	if _, err := l.f.Seek(l.state.size, 0); err != nil {
		return err
	}
	return l.f.Sync()
}

// commitLocked makes the batch part of the durable state.
func (l *Log) commitLocked(b *batchState) {
	start := 0
	for i := range b.events {
		l.state.sum.AddLine(&b.events[i], b.buf[start:b.ends[i]])
		start = b.ends[i]
	}
	l.state.size += int64(len(b.buf))
	if len(b.events) > 0 {
		l.state.last = b.last
	}
	l.epoch = max(l.epoch, b.epoch)
	l.stats.Events += int64(len(b.events))
	l.stats.Syncs++
}

// importEvents checks events sealed elsewhere against the batch state and
// adds the new ones.
func (b *batchState) importEvents(l *Log, r *request) error {
	events := append([]journal.Event(nil), r.sealed...)
	journal.Sort(events)
	fresh, err := b.fresh(l, events)
	if err != nil {
		return err
	}
	if probs := b.check(fresh); len(probs) > 0 {
		return &journal.VerifyError{Problems: probs}
	}
	for _, e := range fresh {
		b.add(e, r)
	}
	return nil
}

// fresh drops the events the journal already has, refusing forks. Events at
// or below a machine's head need the file to compare ids with.
func (b *batchState) fresh(l *Log, events []journal.Event) ([]journal.Event, error) {
	var known map[string]string // "machine\x00seq" -> id, loaded on demand
	var out []journal.Event
	for _, e := range events {
		if e.Seq > b.head(e.Machine).Seq {
			out = append(out, e)
			continue
		}
		if known == nil {
			var err error
			if known, err = l.index(b); err != nil {
				return nil, err
			}
		}
		switch id := known[key(e)]; {
		case id == e.ID:
		case id == "":
			return nil, fmt.Errorf("event %s (machine %s seq %d) is not in the journal", e.ID, e.Machine, e.Seq)
		default:
			return nil, &journal.ForkError{Machine: e.Machine, Seq: e.Seq, A: id, B: e.ID}
		}
	}
	return out, nil
}

func key(e journal.Event) string { return fmt.Sprintf("%s\x00%d", e.Machine, e.Seq) }

// index reads the durable journal and the batch so far, mapping
// (machine, seq) to id.
func (l *Log) index(b *batchState) (map[string]string, error) {
	data := make([]byte, l.state.size)
	if _, err := l.f.ReadAt(data, 0); err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	events, err := journal.Decode(bytes.NewReader(append(data, b.buf...)))
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(events))
	for _, e := range events {
		m[key(e)] = e.ID
	}
	return m, nil
}

// check verifies that events (sorted) continue the batch state: ids, chains
// from the heads, and order after the last event (VerifyTail starts the
// order at the newest head).
func (b *batchState) check(events []journal.Event) []journal.Problem {
	committed := journal.Summary{Heads: b.allHeads()}
	var buf bytes.Buffer
	for i := range events {
		buf.Write(journal.Encode(events[i]))
		buf.WriteByte('\n')
	}
	probs, err := journal.VerifyTail(committed, &buf)
	if err != nil {
		return []journal.Problem{{Code: journal.CodeParse, Msg: err.Error()}}
	}
	return probs
}
