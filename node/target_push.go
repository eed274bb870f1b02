package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/transfer"
)

// Push implements api.PeerService: it stores a push stream's blobs in the
// agent's CAS store (each verified by digest as it arrives, fsynced and
// renamed into place concurrently with reading the next), appends its
// journal lines to the journal copy, then handles its message. A pre-copy
// push that names its manifest then brings the shadow of the next move's
// staging up to that state (shadow.go), ahead of the frozen window.
func (n *Node) Push(ctx context.Context, from string, req api.PushRequest, s *api.StreamReader) (rep api.PushReply, err error) {
	defer func() {
		if err != nil {
			n.log.Warn("push refused", "agent", req.Agent, "call", req.Call, "from", from, "err", err)
		}
	}()
	if _, err := ParseID(from); err != nil {
		return api.PushReply{}, fmt.Errorf("%w: %v", api.ErrForbidden, err)
	}
	a, done := n.peerTenant(req.Agent)
	defer func() { done(err != nil || refusedReplies(rep.Messages)) }()
	a.mu.Lock()
	held := a.holder.Holder() > 0
	a.mu.Unlock()
	// A holder takes no pre-copy pushes and no prepare, but an offer (or a
	// have) must still reach its Target, which refuses it with the epochs
	// a zombie learns it is stale from (PROTOCOL §6 R9).
	if held && req.Call != string(transfer.MsgHave) && req.Call != string(transfer.MsgOffer) {
		return api.PushReply{}, fmt.Errorf("%w: this node holds agent %s", api.ErrConflict, req.Agent)
	}
	p := &pushState{a: a, from: from, call: req.Call, puts: newFinisher()}
	if req.Call == string(transfer.MsgPrepare) {
		p.fresh = a.path(freshDir)
	}
	defer p.puts.wait()
	for {
		f, r, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return p.rep, fmt.Errorf("%w: push: %v", api.ErrInvalid, err)
		}
		p.rep.Bytes += f.Size
		if err := n.pushFrame(ctx, p, f, r); err != nil {
			return p.rep, err
		}
	}
	if err := p.puts.wait(); err != nil {
		return p.rep, fmt.Errorf("%w: %v", api.ErrUnavailable, err)
	}
	if p.message {
		return p.rep, nil
	}
	if err := a.cas().Sync(); err != nil {
		return p.rep, fmt.Errorf("%w: %v", api.ErrUnavailable, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if req.Manifest != "" {
		if err := a.updateShadow(req.Manifest); err != nil {
			a.n.log.Warn("shadow not updated", "agent", a.id, "err", err)
		}
		// The folder a prepare's blobs go to, made now: creating a folder
		// costs about a millisecond on some file systems, which the frozen
		// window need not pay (cas.go finishFresh).
		_ = a.n.fsys.MkdirAll(a.path(freshDir), 0o700)
	}
	return p.rep, nil
}

// pushState is one push stream being received.
type pushState struct {
	a       *tenant
	from    string
	call    string // the request's call: push, have, offer or prepare
	rep     api.PushReply
	puts    *finisher
	message bool   // a message frame arrived
	fresh   string // a prepare's blobs go here, unsynced (cas.go finishFresh)
}

// finish names a received blob: in the CAS store, durably, or for a
// prepare in the fresh folder, which its staging makes durable.
func (p *pushState) finish(pb *store.Pending) {
	if p.fresh != "" {
		p.puts.do(func() error { return pb.FinishUnsynced(p.fresh) })
		return
	}
	p.puts.do(pb.Finish)
}

func (n *Node) pushFrame(ctx context.Context, p *pushState, f api.Frame, r io.Reader) error {
	a := p.a
	switch f.Kind {
	case api.FrameBlob, api.FrameDelta:
		var pb *store.Pending
		var err error
		if f.Kind == api.FrameBlob {
			pb, _, err = a.cas().Receive(f.Digest, f.Size, r)
		} else {
			pb, err = a.receiveDelta(f, r)
		}
		if err != nil {
			return fmt.Errorf("%w: %v", api.ErrInvalid, err)
		}
		if pb == nil {
			p.rep.Present++
			return nil
		}
		p.rep.Stored++
		if f.Kind == api.FrameDelta {
			p.rep.Deltas++
		}
		p.finish(pb)
	case api.FrameJournal:
		k, err := a.appendIncoming(f.Count, r)
		if err != nil {
			return err
		}
		p.rep.Journal += k
		if p.call == string(transfer.MsgOffer) {
			// The offer's tail ends the journal of the move it offers: the
			// render its prepare needs starts now, while the offer's
			// message is still on its way (render.go; a refused offer only
			// wastes the render).
			a.mu.Lock()
			a.renderAhead()
			a.mu.Unlock()
		}
	case api.FrameMessage:
		p.message = true
		return n.deliverMessage(ctx, p, r)
	}
	return nil
}

// deliverMessage handles the message that ends a push stream, once every
// blob before it is in the CAS store. Their directory entries become
// durable with the move's staging (before PREPARED) or, for a message that
// stages nothing, at the next pre-copy push: the CAS store is cache.
func (n *Node) deliverMessage(ctx context.Context, p *pushState, r io.Reader) error {
	if err := p.puts.wait(); err != nil {
		return fmt.Errorf("%w: %v", api.ErrUnavailable, err)
	}
	var am api.Message
	if err := json.NewDecoder(r).Decode(&am); err != nil {
		return fmt.Errorf("%w: message frame: %v", api.ErrInvalid, err)
	}

	reps, err := n.Message(ctx, p.from, am)
	if err != nil {
		return err
	}
	p.rep.Messages = reps.Messages
	p.rep.Render = p.a.renderReport(am)
	return nil
}

// finisher runs the fsync-and-rename of received blobs concurrently with
// the reading of the stream, a few at a time.
type finisher struct {
	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func newFinisher() *finisher { return &finisher{sem: make(chan struct{}, store.SyncWorkers)} }

func (f *finisher) do(fn func() error) {
	f.sem <- struct{}{}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		err := fn()
		<-f.sem
		if err != nil {
			f.mu.Lock()
			f.errs = append(f.errs, err)
			f.mu.Unlock()
		}
	}()
}

// wait waits for every started job and returns their errors.
func (f *finisher) wait() error {
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.errs...)
}
