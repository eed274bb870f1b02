package node

import (
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/transfer"
)

// recover brings every agent back after a start: moves interrupted as
// source are resumed from their records (a source that had sent activate
// resolves, never resumes), leftover staging of moves that are no longer
// pending is discarded (or promoted, if the move committed), and agents
// this node may run and the operator wants running start again.
func (n *Node) recover() {
	n.mu.Lock()
	agents := n.sortedTenants()
	n.mu.Unlock()
	for _, a := range agents {
		n.recoverTenant(a)
	}
}

func (n *Node) recoverTenant(a *tenant) {
	a.mu.Lock()
	if a.blocked != nil {
		a.mu.Unlock()
		n.log.Error("agent blocked: not running it", "agent", a.id, "err", a.blocked)
		return
	}
	rd, moving, err := a.recoverSource()
	if err != nil {
		a.blocked = err
		a.mu.Unlock()
		n.log.Error("agent blocked: records do not check out", "agent", a.id, "err", err)
		return
	}
	a.cleanStaging()
	a.checkHeldJournal()
	var mr *moveRun
	if moving && !rd.Empty() {
		st := a.src.machine.State()
		mr = newMoveRun(st.Move, ID(st.Peer), st.Epoch)
		a.src.move = mr
	}
	if a.run == nil && (mr == nil || !a.src.machine.Frozen()) && a.meta.Run {
		if _, ok := a.mayRun(); ok && exists(n.fsys, a.capsule()) {
			if err := a.startLocked(journal.KindResumed, journal.Resumed{Reason: "node start"}); err != nil {
				n.log.Error("start failed", "agent", a.id, "err", err)
			}
		}
	}
	a.mu.Unlock()
	if mr != nil {
		n.log.Info("recovering move", "agent", a.id, "move", mr.id, "phase", a.src.machine.Phase())
		n.driveReady(a, mr, rd)
	}
}

// checkHeldJournal opens the journal of an agent this node holds, running
// or not, so that a journal the node refuses blocks the agent now, with
// the reason in its status, rather than at the next start (and so that no
// other writer appends to a journal this node holds). Caller holds a.mu.
func (a *tenant) checkHeldJournal() {
	if a.blocked != nil || a.log != nil || !a.hosted() || !exists(a.n.fsys, a.capsule()) {
		return
	}
	if err := a.openLog(a.holder.Holder()); err != nil {
		_ = a.refuse(err)
	}
}

// driveReady executes a Ready the transfer package returned outside a Step
// (RecoverSource), then keeps driving the move.
func (n *Node) driveReady(a *tenant, mr *moveRun, rd transfer.Ready) {
	mr.mu.Lock()
	mr.driving = true
	mr.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		a.mu.Lock()
		rd := a.persistReady(rd)
		a.mu.Unlock()
		next := n.execute(a, mr, rd)
		if rd.Outcome != "" {
			n.reportOutcome(a, mr, rd.Outcome)
		}
		n.driveLoop(a, mr, next...)
	}()
}

// cleanStaging removes the staging of incoming moves that are no longer
// pending. If the latest committed move's promotion was cut short by a
// crash (the HOLDER record is durable, the staging not yet moved in), it
// finishes it.
func (a *tenant) cleanStaging() {
	ents, err := a.n.fsys.ReadDir(a.path(stagingDir))
	if err != nil {
		return
	}
	for _, e := range ents {
		move := e.Name()
		if p := a.holder.Pending(); p != nil && p.Move == move {
			continue
		}
		if epoch, ok := a.committedMove(move); ok && epoch == a.holder.Holder() {
			if err := a.promote(transfer.Action{Kind: transfer.ActStart, Agent: a.id, Move: move, Epoch: epoch}); err != nil {
				a.n.log.Error("finishing promotion failed", "agent", a.id, "move", move, "err", err)
			}
			continue
		}
		if err := a.discard(move); err != nil {
			a.n.log.Warn("discarding stale staging failed", "agent", a.id, "move", move, "err", err)
		}
	}
}

func (a *tenant) committedMove(move string) (uint64, bool) {
	for _, h := range a.holder.State().History {
		if h.Move == move && h.Result == transfer.ResolvedCommitted {
			return h.Epoch, true
		}
	}
	return 0, false
}
