package node

import (
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"sync"
)

// snapMemo is the snapshot.json this node parsed last for the agent: an
// incoming move parses the frozen snapshot once, to rebuild the offer's
// inventory, and its verify finds it here instead of parsing it again
// inside the frozen window.
type snapMemo struct {
	d digest.Digest
	s *capsule.Snapshot // never changed once parsed
}

// parseSnapshot parses b, which the caller checked hashes to d, or
// returns the snapshot it parsed last for d, or the one parseAhead is
// parsing. Caller holds a.mu.
func (a *tenant) parseSnapshot(d digest.Digest, b []byte) (*capsule.Snapshot, error) {
	if a.tgt.snaps.s != nil && a.tgt.snaps.d == d {
		return a.tgt.snaps.s, nil
	}
	s, err := a.tgt.snapPre.parsed(d)
	if s == nil {
		s, err = capsule.ParseSnapshot(b)
	}
	if err == nil {
		a.tgt.snaps = snapMemo{d: d, s: s}
	}
	return s, err
}

// snapAhead is a snapshot.json being parsed in the background: a push
// that brings one (as a delta frame, ahead of its offer's message) starts
// parsing it while the rest of the stream is stored.
type snapAhead struct {
	mu   sync.Mutex
	d    digest.Digest
	done chan struct{}
	s    *capsule.Snapshot
	err  error
}

// start parses data, which hashes to d, in the background, replacing any
// earlier parse ahead.
func (p *snapAhead) start(d digest.Digest, data []byte) {
	done := make(chan struct{})
	p.mu.Lock()
	p.d, p.done, p.s, p.err = d, done, nil, nil
	p.mu.Unlock()
	go func() {
		s, err := capsule.ParseSnapshot(data)
		p.mu.Lock()
		if p.done == done {
			p.s, p.err = s, err
		}
		p.mu.Unlock()
		close(done)
	}()
}

// parsed waits for the parse ahead of d and returns it, or nil and no
// error when none was started for d.
func (p *snapAhead) parsed(d digest.Digest) (*capsule.Snapshot, error) {
	p.mu.Lock()
	done, same := p.done, p.d == d
	p.mu.Unlock()
	if done == nil || !same {
		return nil, nil
	}
	<-done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.d != d {
		return nil, nil
	}
	return p.s, p.err
}
