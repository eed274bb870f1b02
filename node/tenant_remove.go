package node

import (
	"context"
	"fmt"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/node/record"
)

// RemoveAgent implements api.LocalService: `capsule agent rm` removes a
// copy of an agent this node no longer holds (retired, or pre-copied
// blobs of a move that never came) and its caches. It is refused while
// the node holds the agent (running or not), while a move of it is
// unresolved or an incoming one pending, and while it is blocked (damage
// keeps every byte). The holder and source records stay: they carry the
// highest epoch this node has seen, which fences later offers
// (docs/PROTOCOL.md §6 R1, R2, §7.3).
func (n *Node) RemoveAgent(ctx context.Context, id string) error {
	a, err := n.getTenant(id)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.listed() {
		return fmt.Errorf("%w: agent %s", api.ErrNotFound, id)
	}
	if why := a.whyNotRemovable(); why != "" {
		return fmt.Errorf("%w: agent %s: %s", api.ErrConflict, id, why)
	}
	if err := a.removeCopy(); err != nil {
		return fmt.Errorf("remove agent %s: %w", id, err)
	}
	n.log.Info("agent removed", "agent", id, "max_epoch", a.holder.MaxEpoch())
	return nil
}

// whyNotRemovable says why the copy may not be removed, or "". Caller
// holds a.mu.
func (a *tenant) whyNotRemovable() string {
	switch {
	case a.run != nil:
		return "it is running here; stop it and move it away first"
	case a.blocked != nil:
		return "it is blocked (" + a.blocked.Error() + "); nothing of a blocked agent is removed"
	case a.hosted():
		return "this node holds it; move it away first"
	case a.src.machine != nil && !a.src.machine.Done():
		return "move " + a.src.machine.State().Move + " is " + a.src.machine.Phase()
	case a.holder.Pending() != nil || a.tgt.in != nil:
		return "an incoming move is pending"
	}
	return ""
}

// removeCopy removes every file of the agent's folder but its records and
// agent.json, which records the removal, and forgets what the caches held
// in memory. Caller holds a.mu.
func (a *tenant) removeCopy() error {
	keep := map[string]bool{record.HolderFile: true, record.SourceFile: true, record.MetaFile: true,
		record.LegacyPath(record.HolderFile): true, record.LegacyPath(record.SourceFile): true}
	a.dropIncoming()
	a.dropShadow()
	a.cache.Forget()
	a.attach, a.tgt.snaps, a.tgt.ahead = agentlog.Attachments{}, snapMemo{}, nil
	if a.log != nil {
		_ = a.log.Close()
		a.log = nil
	}
	ents, err := a.n.fsys.ReadDir(a.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !keep[e.Name()] {
			if err := a.n.fsys.RemoveAll(a.path(e.Name())); err != nil {
				return err
			}
		}
	}
	if err := a.n.fsys.SyncDir(a.dir); err != nil {
		return err
	}
	a.meta.Removed, a.meta.RemovedAt = true, a.holder.MaxEpoch()
	return a.saveMeta()
}
