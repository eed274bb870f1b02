package node

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
)

// Watchers of an agent (agent log --follow, agent chat) see its journal
// events as they are appended, the assistant's text as it streams, and
// its state changes. Each tenant has a hub; publishers (the journal's
// append hook, the runner) never wait for a watcher: each watcher has a
// bounded buffer, and one that falls behind is cut off with a final
// lagged message, after which it reconnects from the journal.

// watchBuffer bounds the messages waiting for one watcher.
const watchBuffer = 1024

// watchItem is a message on its way to a watcher, with the (machine,
// seq) of the journal event it carries, to dedupe it against the
// journal's history.
type watchItem struct {
	msg     api.WatchMessage
	machine string
	seq     uint64
}

// watcher is one subscriber. Its channel holds watchBuffer messages and
// one more slot, kept for the lagged message; the hub closes it when the
// watcher is cut off, unsubscribed or the node closes.
type watcher struct {
	ch chan watchItem
}

// hub fans out one agent's messages to its watchers. The zero value is
// ready; mu is a leaf lock.
type hub struct {
	mu     sync.Mutex
	subs   map[*watcher]struct{}
	closed bool
}

// subscribe adds a watcher; after close it returns one whose channel is
// already closed.
func (h *hub) subscribe() *watcher {
	w := &watcher{ch: make(chan watchItem, watchBuffer+1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(w.ch)
		return w
	}
	if h.subs == nil {
		h.subs = map[*watcher]struct{}{}
	}
	h.subs[w] = struct{}{}
	return w
}

// unsubscribe removes w, if the hub still has it.
func (h *hub) unsubscribe(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[w]; ok {
		delete(h.subs, w)
		close(w.ch)
	}
}

// publish offers the message build makes (only when someone watches) to
// every watcher without blocking: a watcher whose buffer is full gets the
// lagged message in its last slot and is cut off.
func (h *hub) publish(build func() watchItem) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		return
	}
	it := build()
	for w := range h.subs {
		if len(w.ch) < watchBuffer {
			w.ch <- it
			continue
		}
		w.ch <- watchItem{msg: api.WatchMessage{Lagged: true}}
		delete(h.subs, w)
		close(w.ch)
	}
}

// close ends every watch and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for w := range h.subs {
		delete(h.subs, w)
		close(w.ch)
	}
}

// watchers returns how many watchers the hub has.
func (h *hub) watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// publishEvent shows watchers an event the journal made durable: the
// journal's append hook (set where the log is opened).
func (a *tenant) publishEvent(e journal.Event) {
	a.watch.publish(func() watchItem {
		return watchItem{msg: api.WatchMessage{Event: journal.Encode(e)}, machine: e.Machine, seq: e.Seq}
	})
}

// publishDelta shows watchers text the model is generating in step
// (never journaled until the generation completes).
func (a *tenant) publishDelta(step, text string) {
	a.watch.publish(func() watchItem {
		return watchItem{msg: api.WatchMessage{Delta: &api.WatchDelta{Step: step, Text: text}}}
	})
}

// publishState shows watchers that the agent changed state: running,
// idle, blocked, frozen, moved (api.State*, api.WatchIdle, api.WatchMoved),
// and why.
func (a *tenant) publishState(state, reason string) {
	a.watch.publish(func() watchItem {
		return watchItem{msg: api.WatchMessage{State: &api.WatchState{State: state, Reason: reason}}}
	})
}

// endWatches ends every watch of every agent, for the node's shutdown:
// an open watch would keep its HTTP server from shutting down.
func (n *Node) endWatches() {
	n.mu.Lock()
	agents := n.sortedTenants()
	n.mu.Unlock()
	for _, a := range agents {
		a.watch.close()
	}
}

// WatchAgent implements api.LocalService: the agent's state, then its
// journal from opts (unless opts.Live), a caught-up mark, then what
// happens live, until ctx
// is done, send fails, the watcher lags (its last message says so) or
// the node closes. The watcher subscribes before it reads the journal,
// so nothing falls between the two; a live event the journal already
// showed is dropped by its (machine, seq).
func (n *Node) WatchAgent(ctx context.Context, id string, opts api.WatchOptions, send func(api.WatchMessage) error) error {
	a, err := n.getTenant(id)
	if err != nil {
		return err
	}
	a.mu.Lock()
	listed, state := a.listed(), a.state()
	a.mu.Unlock()
	if !listed {
		return fmt.Errorf("%w: agent %s: this node neither holds it nor keeps a copy", api.ErrNotFound, id)
	}
	w := a.watch.subscribe()
	defer a.watch.unsubscribe(w)
	if err := send(api.WatchMessage{State: &api.WatchState{State: state}}); err != nil {
		return err
	}
	seen := map[string]uint64{}
	if !opts.Live {
		if err := a.sendHistory(opts.From, seen, send); err != nil {
			return err
		}
	}
	if err := send(api.WatchMessage{CaughtUp: true}); err != nil {
		return err
	}
	return sendLive(ctx, w, seen, send)
}

// sendLive passes w's messages to send until ctx is done or w ends,
// dropping events at or below the seq seen of their machine.
func sendLive(ctx context.Context, w *watcher, seen map[string]uint64, send func(api.WatchMessage) error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case it, ok := <-w.ch:
			if !ok {
				return nil
			}
			if it.machine != "" && it.seq <= seen[it.machine] {
				continue
			}
			if err := send(it.msg); err != nil {
				return err
			}
		}
	}
}

// sendHistory sends the journal's whole lines after its first from, as
// far as the file reaches when it starts, and records each machine's highest seq in
// seen (the skipped lines included: the watcher has them).
func (a *tenant) sendHistory(from int, seen map[string]uint64, send func(api.WatchMessage) error) error {
	f, err := a.n.fsys.Open(filepath.Join(a.capsule(), filepath.FromSlash(manifest.JournalPath)))
	if err != nil {
		return fmt.Errorf("watch %s: %w", a.id, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("watch %s: %w", a.id, err)
	}
	r := bufio.NewReaderSize(io.LimitReader(f, info.Size()), 64<<10)
	for i := 0; ; i++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return nil // a torn or unfinished last line: it comes live once whole
		}
		if err != nil {
			return fmt.Errorf("watch %s: read journal: %w", a.id, err)
		}
		line = line[:len(line)-1]
		e, err := journal.ParseLine(line)
		if err != nil {
			return fmt.Errorf("watch %s: journal line %d: %w", a.id, i+1, err)
		}
		seen[e.Machine] = max(seen[e.Machine], e.Seq)
		if i < from {
			continue
		}
		if err := send(api.WatchMessage{Event: line}); err != nil {
			return err
		}
	}
}
