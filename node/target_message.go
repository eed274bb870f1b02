package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/transfer"
)

// Message implements api.PeerService: one move-protocol request, handled by
// the agent's Target, whose reply is returned.
func (n *Node) Message(ctx context.Context, from string, am api.Message) (api.Replies, error) {
	var m transfer.Message
	if err := json.Unmarshal(am.Body, &m); err != nil {
		return api.Replies{}, fmt.Errorf("%w: message: %v", api.ErrInvalid, err)
	}
	if m.From != from {
		return api.Replies{}, fmt.Errorf("%w: message claims to come from %s, the connection proved %s", api.ErrForbidden, m.From, from)
	}
	if m.Agent == "" {
		return api.Replies{}, fmt.Errorf("%w: message names no agent", api.ErrInvalid)
	}
	if am.Inventory != "" && am.Inventory != api.InventoryManifest {
		return api.Replies{}, fmt.Errorf("%w: message: unknown inventory %q", api.ErrInvalid, am.Inventory)
	}
	if m.Type == transfer.MsgOffer {
		if err := n.notReady(); err != nil {
			return api.Replies{}, err
		}
	}
	a, done := n.peerTenant(m.Agent)
	reply, bases, err := a.handleWire(m, am.Inventory == api.InventoryManifest)
	done(err != nil || refusedReply(reply))
	if err != nil {
		n.log.Warn("peer request failed", "agent", m.Agent, "call", string(m.Type), "move", m.Move, "epoch", m.Epoch, "from", from, "err", err)
		return api.Replies{}, err
	}
	a.logReply(m, reply)
	if reply == nil {
		return api.Replies{}, nil
	}
	return api.Replies{Messages: []api.Message{{Call: string(reply.Type), Body: n.replyBody(reply), Bases: bases}}}, nil
}

// noteIntent makes the operator's intent an activate carries durable in
// agent.json before the Target steps it, when it is the activate of the
// prepared pending move: the prepare wrote the intent it carried, and the
// operator may have stopped or started the agent since. A restart that
// finishes the promotion (HOLDER durable, staging not yet moved in) reads
// it there. agent.json grants nothing: only a holder record lets the
// agent run. Caller holds a.mu.
func (a *tenant) noteIntent(m transfer.Message) error {
	p := a.holder.Pending()
	if m.Type != transfer.MsgActivate || p == nil || p.Move != m.Move || p.Epoch != m.Epoch || p.Phase != transfer.PhasePrepared {
		return nil
	}
	if a.meta.Run == !m.Stopped && exists(a.n.fsys, a.path(record.MetaFile)) {
		return nil
	}
	a.meta.Run = !m.Stopped
	return a.saveMetaIfChanged()
}

// logReply logs what this node decided about an incoming move, so the
// target's log says why a move failed as the source's does: a refusal with
// its reason and problems, an abort, a resolution, an activation.
func (a *tenant) logReply(m transfer.Message, reply *transfer.Message) {
	if reply == nil {
		return
	}
	args := []any{"agent", a.id, "move", m.Move, "epoch", m.Epoch, "from", m.From}
	switch reply.Type {
	case transfer.MsgRefused:
		args = append(args, "call", string(m.Type), "reason", string(reply.Reason), "max_epoch", reply.MaxEpoch, "holder", reply.Holder)
		if len(reply.Problems) > 0 {
			args = append(args, "problems", strings.Join(reply.Problems, "; "))
		}
		a.n.log.Warn("request refused", args...)
	case transfer.MsgAborted:
		a.n.log.Info("incoming move aborted", args...)
	case transfer.MsgResolved:
		a.n.log.Info("incoming move resolved", append(args, "resolution", string(reply.Resolution))...)
	case transfer.MsgActivated:
		a.n.log.Info("incoming move activated", args...)
	}
}

// handle steps the agent's Target with a request, performing the actions it
// asks for (verify, prepare, start, discard), and returns the reply.
func (a *tenant) handle(m transfer.Message) (*transfer.Message, error) {
	reply, _, err := a.handleWire(m, false)
	return reply, err
}

// handleWire is handle for a request as it came off the wire: one whose
// inventory is its manifest's (byManifest) gets its blob list rebuilt from
// this node's store first, or is refused. It also returns, for a want or
// promise, the delta bases this node offers.
func (a *tenant) handleWire(m transfer.Message, byManifest bool) (*transfer.Message, []digest.Digest, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.blocked != nil {
		return nil, nil, fmt.Errorf("%w: agent %s: %v", api.ErrUnavailable, a.id, a.blocked)
	}
	if byManifest && (m.Type == transfer.MsgHave || m.Type == transfer.MsgOffer || m.Type == transfer.MsgPrepare) {
		blobs, err := a.manifestInventory(m)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", api.ErrInvalid, err)
		}
		m.Blobs = blobs
	}
	if err := a.noteIntent(m); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", api.ErrUnavailable, err)
	}
	if err := a.authorizeActivate(m); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", api.ErrUnavailable, err)
	}
	in := transfer.Receive(m)
	var bases []digest.Digest
	if m.Type == transfer.MsgHave || m.Type == transfer.MsgOffer {
		in.Missing = a.missing(m.Blobs)
		in.Journal = a.incomingPos()
		bases = a.shadowBases()
	}
	reply, err := a.stepRequest(in)
	if reply == nil || reply.Type != transfer.MsgWant && reply.Type != transfer.MsgPromise {
		bases = nil
	}
	if reply != nil && reply.Type == transfer.MsgPromise && reply.Have == m.Journal {
		a.renderAhead() // the journal copy is the one the move will stage
	}
	return reply, bases, err
}

// stepRequest steps the Target with a request's input and runs the
// actions that follow, returning the reply. Caller holds a.mu.
func (a *tenant) stepRequest(in transfer.Input) (*transfer.Message, error) {
	m := in.Msg
	start := a.n.clock.Now()
	rd, err := a.stepTarget(in)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", api.ErrUnavailable, err)
	}
	a.n.log.Debug("target step", "agent", a.id, "call", string(m.Type), "records", len(rd.Records), "ms", a.n.clock.Now().Sub(start).Milliseconds())
	var reply *transfer.Message
	for {
		if len(rd.Messages) > 0 {
			reply = &rd.Messages[0]
		}
		var results []transfer.Input
		for _, act := range rd.Actions {
			start := a.n.clock.Now()
			r, ok := a.targetAction(act)
			a.n.log.Debug("target action", "agent", a.id, "action", string(act.Kind), "ms", a.n.clock.Now().Sub(start).Milliseconds())
			if ok {
				results = append(results, r)
			}
		}
		if len(results) == 0 {
			return reply, nil
		}
		if rd, err = a.stepTarget(results[0]); err != nil {
			return nil, fmt.Errorf("%w: %v", api.ErrUnavailable, err)
		}
	}
}

func (a *tenant) targetAction(act transfer.Action) (transfer.Input, bool) {
	switch act.Kind {
	case transfer.ActVerify:
		probs := a.stage(act)
		return transfer.Input{Kind: transfer.InVerified, OK: len(probs) == 0, Problems: probs}, true
	case transfer.ActPrepare:
		probs := a.prepare(act)
		return transfer.Input{Kind: transfer.InPrepared, OK: len(probs) == 0, Problems: probs}, true
	case transfer.ActStart:
		a.rememberStaged(act.Move)
		if err := a.promote(act); err != nil {
			a.blocked = fmt.Errorf("start after move %s: %w", act.Move, err)
			a.n.log.Error("start failed", "agent", a.id, "err", err)
		}
	case transfer.ActDiscard:
		if err := a.discard(act.Move); err != nil {
			a.n.log.Warn("discard failed", "agent", a.id, "move", act.Move, "err", err)
		}
	}
	return transfer.Input{}, false
}

// missing returns the digests of blobs absent from the agent's CAS store.
// Blobs the shadow references are in the store (each pre-copy push syncs
// the store before it updates the shadow, and only a move's verify, which
// consumes the shadow, takes blobs out): only the others are looked up,
// one stat each, or with one directory read when they are many (a name in
// the store always holds the bytes its digest commits to). A blob wrongly
// taken as present costs availability only: the move's verify reads the
// staged blob folder and refuses it.
func (a *tenant) missing(blobs []transfer.Blob) []digest.Digest {
	known := a.shadowBlobs()
	var out, unknown []digest.Digest
	seen := make(map[digest.Digest]bool, len(blobs))
	for _, b := range blobs {
		if !seen[b.Digest] && !known[b.Digest] {
			unknown = append(unknown, b.Digest)
		}
		seen[b.Digest] = true
	}
	if len(unknown) > maxMissingStats {
		present, err := blobNames(a.n.fsys, a.cas().Dir)
		if err != nil {
			present = nil // no store yet (or unreadable): every blob is wanted
		}
		for _, d := range unknown {
			if !present[d.Hex()] {
				out = append(out, d)
			}
		}
		return out
	}
	for _, d := range unknown {
		if fi, err := a.n.fsys.Lstat(a.cas().Path(d)); err != nil || !fi.Mode().IsRegular() {
			out = append(out, d)
		}
	}
	return out
}

// maxMissingStats is how many blobs missing looks up one by one before it
// reads the whole store's directory instead.
const maxMissingStats = 64

// shadowBlobs returns the blobs and layout files of the shadow this
// process built or loaded, or nil. Caller holds a.mu.
func (a *tenant) shadowBlobs() map[digest.Digest]bool {
	sh := a.tgt.shadow
	if sh == nil {
		return nil
	}
	if sh.blobs == nil {
		sh.blobs = make(map[digest.Digest]bool, len(sh.snap.Entries)+len(sh.state.Files))
		for _, e := range sh.snap.Entries {
			if e.Type == capsule.TypeFile {
				sh.blobs[e.Blob] = true
			}
		}
		for _, d := range sh.state.Files {
			sh.blobs[d] = true
		}
	}
	return sh.blobs
}
