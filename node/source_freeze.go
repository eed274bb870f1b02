package node

import (
	"fmt"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/transfer"
)

// freezeForMove stops the runner at a step boundary (ActFreeze), journals
// the freeze, commits the capsule and reports the frozen inventory.
func (a *tenant) freezeForMove(mr *moveRun) transfer.Input {
	mr.setPhase(api.PhaseFreeze)
	if h := a.n.hooks.beforeFreeze; h != nil {
		h(a.id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	reason := fmt.Sprintf("move %s to %s", mr.id, mr.to)
	err := a.freezeLocked(reason, mr)
	if err == nil {
		var inv transfer.Inventory
		if inv, err = a.frozenInventory(mr); err == nil {
			mr.noteFrozenHeads(a, inv)
			return transfer.Input{Kind: transfer.InFrozen, OK: true, Inventory: &inv}
		}
	}
	a.n.log.Warn("freeze failed", "agent", a.id, "err", err)
	return transfer.Input{Kind: transfer.InFrozen, OK: false, Problems: []string{err.Error()}}
}

// freezeLocked stops the agent at a step boundary and journals the freeze
// (durably). The frozen window starts when the runner has stopped: until
// its current step ends the agent is still working.
func (a *tenant) freezeLocked(reason string, mr *moveRun) error {
	stop := func() {
		mr.mu.Lock()
		mr.frozenAt = a.n.clock.Now()
		mr.mu.Unlock()
	}
	if a.run != nil {
		rl := a.run
		if err := a.stopRunnerLocked(); err != nil {
			return err
		}
		if n := rl.cancelled.Load(); n > 0 {
			mr.noteCancelled(int(n))
		}
	}
	stop()
	if err := a.openLog(a.holder.Holder()); err != nil {
		return err
	}
	_, err := a.log.Append(journal.KindFrozen, a.holder.Holder(), a.n.wallTime(), journal.Frozen{Reason: reason})
	a.n.log.Info("agent frozen", "agent", a.id, "epoch", a.holder.Holder(), "reason", reason)
	a.publishState(api.StateFrozen, reason)
	return err
}

// liveInventory commits the running agent's current state between two
// steps and returns its inventory, for pre-copy.
//
// While a tool runs, the round does not wait for it: it sends the state
// last committed (a capsule's committed files never change in place, so
// it is read without the step lock), and the freeze, asked for while the
// tool still runs, waits for it (at most ToolWait) and lands right after
// its result, with the step's other calls still to run on the target.
func (a *tenant) liveInventory(mr *moveRun) (transfer.Inventory, error) {
	if !a.stepMu.TryLock() {
		if rl := a.run; rl != nil && rl.inPhase(agent.PhaseTool) {
			return a.committedInventory(mr)
		}
		if !a.lockStepWithin(a.n.cfg.ToolWait) {
			return transfer.Inventory{}, &ToolRunningError{Agent: a.id, Wait: a.n.cfg.ToolWait}
		}
	}
	defer a.stepMu.Unlock()
	mr.mu.Lock()
	mr.rounds++
	mr.mu.Unlock()
	if err := a.openLog(a.holder.Holder()); err != nil {
		return transfer.Inventory{}, err
	}
	if err := a.commitLocked(); err != nil {
		return transfer.Inventory{}, err
	}
	inv, err := a.inventoryLocked(mr)
	if err == nil {
		mr.noteLiveHeads(a, inv)
	}
	return inv, err
}

// committedInventory is a pre-copy round's inventory of the state last
// committed, taken while a tool runs.
func (a *tenant) committedInventory(mr *moveRun) (transfer.Inventory, error) {
	mr.mu.Lock()
	mr.rounds++
	mr.mu.Unlock()
	inv, err := a.inventoryLocked(mr)
	if err == nil {
		mr.noteLiveHeads(a, inv)
	}
	return inv, err
}

// resume runs the agent again after a rollback (at its old epoch) or a
// force (at a new epoch, adopted first).
func (a *tenant) resume(epoch uint64, mr *moveRun) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if epoch != a.holder.Holder() {
		if _, err := a.stepTarget(transfer.Input{Kind: transfer.InAdopt, Epoch: epoch}); err != nil {
			a.n.log.Error("adopt forced epoch failed", "agent", a.id, "epoch", epoch, "err", err)
			return
		}
	}
	if !a.meta.Run {
		return
	}
	reason := "move " + mr.id + " rolled back"
	if err := a.startLocked(journal.KindResumed, journal.Resumed{Reason: reason}); err != nil {
		a.n.log.Error("resume failed", "agent", a.id, "err", err)
	}
}

// retire records that the agent now lives on the successor: the Target
// releases it, the journal closes, and the capsule folder becomes a cache
// (blobs into the CAS store, the journal into incoming.jsonl) so that a
// later move back sends only what changed. The frozen workspace stays as
// the shadow of such a move (keepShadow), when mr knows what it holds.
func (a *tenant) retire(act transfer.Action, mr *moveRun) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.stepTarget(transfer.Input{Kind: transfer.InRelease, Move: act.Move, Epoch: act.Epoch}); err != nil {
		a.n.log.Error("release failed", "agent", a.id, "err", err)
		return
	}
	a.publishState(api.WatchMoved, "moved to "+string(mr.to))
	events := int64(-1)
	if a.log != nil {
		events = a.log.Summary().Events
		_ = a.log.Close()
		a.log = nil
	}
	mr.mu.Lock()
	fw := mr.frozenWork
	mr.mu.Unlock()
	if err := a.toCache(events, fw); err != nil {
		a.n.log.Warn("retire: keeping the capsule folder", "agent", a.id, "err", err)
	}
	a.n.log.Info("agent retired", "agent", a.id, "successor", act.Peer, "epoch", act.Epoch)
}
