package node

import (
	"encoding/json"

	"github.com/agentcapsule/capsule/api"
)

// renderReport returns what the prepare of the move named by the message
// rendered, if it is this agent's current incoming move.
func (a *tenant) renderReport(am api.Message) *api.RenderReport {
	var m struct {
		Move string `json:"move"`
	}
	if json.Unmarshal(am.Body, &m) != nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tgt.in == nil || a.tgt.in.move != m.Move {
		return nil
	}
	return a.tgt.in.render
}

// renderAhead starts rendering the journal copy in the background unless
// a render of exactly that journal is already under way. Caller holds a.mu.
func (a *tenant) renderAhead() {
	l := a.tgt.inc
	if l == nil || len(l.events) == 0 {
		return
	}
	key := keyOfLog(l.log)
	if key.events != int64(len(l.events)) || (a.tgt.ahead != nil && a.tgt.ahead.key == key) {
		return
	}
	r := &aheadRender{key: key, done: make(chan struct{})}
	events := l.events[:len(l.events):len(l.events)] // appends never write into what it reads
	fn, now := a.n.hooks.render, a.n.clock.Now
	go func() {
		defer close(r.done)
		r.rep, r.err = renderJournal(events, fn, now)
	}()
	a.tgt.ahead = r
}

// takeAhead returns the render ahead of the journal key, if one was
// started, and forgets it. Caller holds a.mu.
func (a *tenant) takeAhead(key journalKey) *aheadRender {
	r := a.tgt.ahead
	a.tgt.ahead = nil
	if r == nil || r.key != key {
		return nil
	}
	return r
}
