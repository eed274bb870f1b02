package node

import (
	"crypto/rand"
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/oklog/ulid/v2"
)

// startMove begins moving agent id to the peer to and returns at once; the
// move goes on in the background (Move waits for it).
func (n *Node) startMove(id string, to ID) (*moveRun, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return nil, err
	}
	if to == n.id {
		return nil, fmt.Errorf("%w: %s is this node's own ID: a move needs another node (a peer)", api.ErrInvalid, to)
	}
	peer, ok := n.peers.Get(to)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a peer of this node", api.ErrInvalid, to)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.blocked != nil {
		return nil, fmt.Errorf("%w: %v", api.ErrConflict, a.blocked)
	}
	if err := transfer.CheckStart(a.holder, a.src.machine); err != nil {
		return nil, fmt.Errorf("%w: %v", api.ErrConflict, err)
	}
	last := uint64(0)
	if a.src.machine != nil {
		last = a.src.machine.State().Epoch
	}
	moveID, err := ulid.New(ulid.Timestamp(n.clock.Now()), rand.Reader)
	if err != nil {
		return nil, err
	}
	cfg := n.sourceConfig()
	cfg.Agent, cfg.Move, cfg.Self, cfg.Peer = id, moveID.String(), string(n.id), string(peer.ID)
	cfg.Holder, cfg.Epoch = a.holder.Holder(), transfer.NextEpoch(a.holder.MaxEpoch(), last)
	src, err := transfer.NewSource(cfg)
	if err != nil {
		return nil, err
	}
	mr := newMoveRun(cfg.Move, peer.ID, cfg.Epoch)
	inv, err := a.liveInventory(mr)
	if err != nil {
		return nil, err
	}
	a.src.machine, a.src.move = src, mr
	n.m.started.Inc()
	n.log.Info("move started", "agent", id, "move", mr.id, "to", string(to), "epoch", cfg.Epoch)
	n.drive(a, mr, transfer.Input{Kind: transfer.InStart, Inventory: &inv})
	return mr, nil
}

// drive runs the driver loop of a in the background, starting with first.
func (n *Node) drive(a *tenant, mr *moveRun, first transfer.Input) {
	mr.mu.Lock()
	mr.driving = true
	mr.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.driveLoop(a, mr, first)
	}()
}

// driveLoop is the loop of transfer's package doc: step each queued input, persist
// its records, then send its messages and perform its actions, whose
// results are the next inputs. When nothing is left it waits a retry
// interval and ticks, until the source is done.
func (n *Node) driveLoop(a *tenant, mr *moveRun, queue ...transfer.Input) {
	for {
		if len(queue) == 0 {
			a.mu.Lock()
			done := a.src.machine.Done()
			a.mu.Unlock()
			if done || ctxDone(n.ctx) {
				break
			}
			select {
			case in := <-mr.inputs:
				queue = append(queue, in)
			case <-n.clock.After(n.cfg.RetryInterval):
				queue = append(queue, transfer.Input{Kind: transfer.InTick})
			case <-n.ctx.Done():
			}
			continue
		}
		in := queue[0]
		queue = queue[1:]
		rd := a.stepSource(in)
		queue = append(queue, n.execute(a, mr, rd)...)
		if rd.Outcome != "" {
			n.reportOutcome(a, mr, rd.Outcome)
		}
	}
	mr.mu.Lock()
	mr.driving = false
	mr.mu.Unlock()
}

// stepSource feeds in to the agent's Source and persists the records of
// the Ready, reporting a failed persist back to the Source.
func (a *tenant) stepSource(in transfer.Input) transfer.Ready {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.persistReady(a.src.machine.Step(in))
}

// persistReady makes rd's records durable before anything in rd may be
// sent or done; when that fails it tells the Source and returns the Ready
// it answers with instead. The caller holds a.mu.
func (a *tenant) persistReady(rd transfer.Ready) transfer.Ready {
	for len(rd.Records) > 0 {
		err := a.persist(rd.Records)
		if err == nil {
			break
		}
		a.n.log.Error("persist failed", "agent", a.id, "record", string(rd.Records[0].Kind), "err", err)
		rd = a.src.machine.Step(transfer.Input{Kind: transfer.InPersistFailed})
	}
	return rd
}

// execute sends the Ready's messages and performs its actions; it returns
// the inputs they produced.
func (n *Node) execute(a *tenant, mr *moveRun, rd transfer.Ready) []transfer.Input {
	var next []transfer.Input
	for _, m := range rd.Messages {
		next = append(next, n.send(a, mr, m)...)
	}
	for _, act := range rd.Actions {
		start := n.clock.Now()
		in, ok := n.act(a, mr, act)
		n.log.Debug("source action", "agent", a.id, "action", string(act.Kind), "ms", n.clock.Now().Sub(start).Milliseconds())
		if ok {
			next = append(next, in)
		}
	}
	return next
}

func (n *Node) act(a *tenant, mr *moveRun, act transfer.Action) (transfer.Input, bool) {
	switch act.Kind {
	case transfer.ActInventory:
		a.mu.Lock()
		inv, err := a.liveInventory(mr)
		a.mu.Unlock()
		if err != nil {
			n.log.Warn("inventory failed", "agent", a.id, "err", err)
			return transfer.Input{Kind: transfer.InPushed, OK: false, Problems: []string{"inventory: " + err.Error()}}, true
		}
		return transfer.Input{Kind: transfer.InInventory, Inventory: &inv}, true
	case transfer.ActPush:
		err := n.push(a, mr, act.Blobs, act.JournalFrom, act.Journal, nil)
		if err != nil {
			n.log.Warn("pre-copy push failed", "agent", a.id, "to", string(mr.to), "err", err)
			return transfer.Input{Kind: transfer.InPushed, Problems: []string{"push: " + err.Error()}}, true
		}
		if act.Journal.Count > 0 {
			mr.noteTargetJournal(act.Journal)
		}
		return transfer.Input{Kind: transfer.InPushed, OK: true}, true
	case transfer.ActFreeze:
		return a.freezeForMove(mr), true
	case transfer.ActResume:
		a.resume(act.Epoch, mr)
	case transfer.ActRetire:
		a.retire(act, mr)
	}
	return transfer.Input{}, false
}

// send delivers one request to the peer and returns the replies as inputs,
// or InSendFailed when the request or its reply was lost.
func (n *Node) send(a *tenant, mr *moveRun, m transfer.Message) []transfer.Input {
	mr.setPhase(phaseOf(m.Type))
	if m.Type == transfer.MsgPrepare || m.Type == transfer.MsgActivate {
		a.mu.Lock()
		m.Stopped = !a.meta.Run // the operator's intent travels with the agent
		a.mu.Unlock()
	}
	if m.Type == transfer.MsgResolve {
		if in, ok := n.settleByAuthority(m); ok {
			return in
		}
	}
	start := n.clock.Now()
	var replies []api.Message
	var err error
	switch m.Type {
	case transfer.MsgHave, transfer.MsgOffer, transfer.MsgPrepare:
		replies, err = n.pushMessage(a, mr, m)
	default:
		replies, err = n.call(ID(m.To), m)
	}
	mr.mu.Lock()
	if !mr.frozenAt.IsZero() && mr.frozenMS == 0 {
		mr.frozenRT++
	}
	mr.mu.Unlock()
	n.log.Debug("request", "agent", a.id, "call", string(m.Type), "ms", n.clock.Now().Sub(start).Milliseconds(), "err", err)
	if err != nil {
		n.log.Warn("request failed", "agent", a.id, "call", string(m.Type), "to", m.To, "err", err)
		return []transfer.Input{{Kind: transfer.InSendFailed, Problems: []string{err.Error()}}}
	}
	var out []transfer.Input
	for _, r := range replies {
		var tm transfer.Message
		if json.Unmarshal(r.Body, &tm) != nil {
			continue
		}
		if tm.Type == transfer.MsgActivated || tm.Type == transfer.MsgResolved && tm.Resolution == transfer.ResolvedCommitted {
			mr.markRunningOnTarget(n.clock.Now())
		}
		if tm.Type == transfer.MsgWant || tm.Type == transfer.MsgPromise {
			if why := a.pin(mr, peerReads(r.Body), tm.Type == transfer.MsgPromise); why != "" {
				n.log.Warn("move refused by the version exchange", "agent", a.id, "move", mr.id, "to", m.To, "reason", why)
				out = append(out, transfer.Receive(refusedBySource(tm, why)))
				continue
			}
			mr.noteWant(m.Blobs, tm.Want, r.Bases)
			mr.noteTargetJournal(tm.Have)
		}
		out = append(out, transfer.Receive(tm))
	}
	if len(out) == 0 {
		n.log.Warn("request unanswered", "agent", a.id, "call", string(m.Type), "to", m.To)
		return []transfer.Input{{Kind: transfer.InSendFailed, Problems: []string{fmt.Sprintf("%s: %s sent no reply", m.Type, m.To)}}}
	}
	return out
}

// reportOutcome records the source's verdict and wakes Move callers when it
// is final.
func (n *Node) reportOutcome(a *tenant, mr *moveRun, o transfer.Outcome) {
	a.mu.Lock() // lock order: agent, then move
	note := a.src.machine.State().Note
	a.mu.Unlock()
	mr.mu.Lock()
	mr.outcome = o
	mr.reason = note
	mr.phase = api.PhaseDone
	if o == transfer.OutcomeWaiting {
		mr.phase = api.PhaseResolve
	}
	final := o.Final() && !mr.finished
	if final {
		mr.finished = true
	}
	if o == transfer.OutcomeWaiting && !mr.waited {
		mr.waited = true
		close(mr.waiting)
	}
	frozen := mr.frozenMS
	mr.mu.Unlock()
	switch o {
	case transfer.OutcomeCommitted:
		n.m.committed.Inc()
		n.m.frozen.Observe(float64(frozen) / 1000)
	case transfer.OutcomeRolledBack:
		n.m.rolledBack.Inc()
	case transfer.OutcomeStale:
		n.m.stale.Inc()
	}
	if note == "" {
		n.log.Info("move outcome", "agent", a.id, "move", mr.id, "to", string(mr.to), "outcome", string(o), "frozen_ms", frozen)
	} else {
		n.log.Warn("move outcome", "agent", a.id, "move", mr.id, "to", string(mr.to), "outcome", string(o), "reason", note)
	}
	if final {
		mr.setPhase(api.PhaseDone)
		close(mr.done)
	}
}
