package node

import (
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/transfer"
)

// status reports the agent as seen by this node. Caller holds a.mu.
func (a *tenant) status() api.AgentStatus {
	st := api.AgentStatus{ID: a.id, Name: a.meta.Name, Node: string(a.n.id), Steps: a.steps.Load()}
	if e, ok := a.lastErr.Load().(string); ok {
		st.Error = e
	}
	if a.holder != nil {
		st.Epoch = a.holder.Holder()
		if st.Epoch == 0 {
			st.Epoch = a.holder.MaxEpoch()
		}
	}
	st.State = a.state()
	src := a.currentSource()
	if a.holder != nil && a.holder.Holder() > 0 {
		st.Holder = string(a.n.id)
	}
	if src != nil && src.Outcome() == transfer.OutcomeCommitted {
		st.Successor = src.State().Peer
		st.Holder = st.Successor
	}
	if a.blocked != nil {
		st.Error = a.blocked.Error()
		st.Blocked = st.Error
	}
	if a.log != nil {
		st.Events = int(a.log.Pos().Count)
	}
	if a.run != nil {
		act, why := a.run.status()
		st.Activity = act
		if act == activityBlocked {
			st.State, st.Blocked = api.StateBlocked, why
		}
		if m := a.run.model.Load(); m != nil {
			st.Model = m
		}
		if sb := a.run.sandbox.Load(); sb != nil {
			st.Sandbox = *sb
		}
	}
	if a.hosted() {
		st.Waiting, st.Unresolved = a.effects()
	}
	if src != nil && a.src.move != nil && a.src.move.id == src.State().Move {
		ms := a.moveStatus()
		st.Move = &ms
	}
	return st
}

// moveStatus is the status of the source's latest move run. The run's own
// phase is the last one it reported (resolve, done); a rolled-back move
// whose abort the target has not yet answered is shown as aborting, since
// that is why a new move is refused. Caller holds a.mu; a.src.move is set.
func (a *tenant) moveStatus() api.MoveStatus {
	ms := a.src.move.status()
	if m := a.src.machine; m != nil && m.Phase() == phaseAborting && m.State().Move == ms.MoveID {
		ms.Phase = api.PhaseAborting
	}
	return ms
}

// state derives the agent's state from the durable holder record, the
// current move (currentSource) and the runner. An agent this node does not
// hold is retired only if it held it and its RETIRED source record says it
// moved away, and incoming while a move into this node is pending or
// pre-copied data of one is here; otherwise it is "", not listed: a node
// that never held an agent and has nothing of a move of it does not show
// it (docs/PROTOCOL.md §7.3). Caller holds a.mu.
func (a *tenant) state() string {
	src := a.currentSource()
	switch {
	case a.blocked != nil:
		return api.StateBlocked
	case a.run != nil:
		return api.StateRunning
	case !a.hosted():
		return a.unheldState()
	case src != nil && src.Frozen():
		return api.StateFrozen
	}
	return api.StateStopped
}

// unheldState is the state of an agent this node does not hold: a move
// into this node pending comes first (the agent is coming back), then the
// move this node retired it in, then pre-copied data. Caller holds a.mu.
func (a *tenant) unheldState() string {
	switch {
	case a.holder != nil && a.holder.Pending() != nil || a.tgt.in != nil:
		return api.StateIncoming
	case a.src.machine != nil && a.src.machine.Outcome() == transfer.OutcomeCommitted:
		return api.StateRetired
	case a.hasPrecopy():
		return api.StateIncoming
	}
	return ""
}

// hasPrecopy reports whether the agent's folder holds what a pre-copy
// brings: CAS blobs, a journal copy with events, or a shadow of the next
// staging. An offer opens an empty journal copy: that is not data.
func (a *tenant) hasPrecopy() bool {
	if a.tgt.shadow != nil || exists(a.n.fsys, a.path(shadowFile)) {
		return true
	}
	if a.tgt.inc != nil && len(a.tgt.inc.events) > 0 {
		return true
	}
	if fi, err := a.n.fsys.Stat(a.path(incomingFile)); a.tgt.inc == nil && err == nil && fi.Size() > 0 {
		return true
	}
	ents, err := a.n.fsys.ReadDir(a.cas().Dir)
	return err == nil && len(ents) > 0
}

// removed reports whether the operator removed this copy (`agent rm`) and
// nothing about the agent happened here since. Caller holds a.mu.
func (a *tenant) removed() bool {
	return a.meta.Removed && !a.hosted() && a.holder.Pending() == nil && a.tgt.in == nil && a.holder.MaxEpoch() == a.meta.RemovedAt
}

// listed reports whether `agent list` shows the agent: not removed, and
// in a state (see state). Caller holds a.mu.
func (a *tenant) listed() bool {
	return !a.removed() && a.state() != ""
}

// hosted reports whether this node holds the agent (not retired, not only
// a cache of pre-copied blobs or an incoming move). Caller holds a.mu.
func (a *tenant) hosted() bool {
	return a.holder != nil && a.holder.Holder() > 0
}
