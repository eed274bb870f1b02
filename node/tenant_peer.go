package node

import (
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/transfer"
)

// peerTenant returns the agent a peer request names and the function the
// caller calls when the request is done, saying whether it was refused.
// An agent the node did not know (no entry, no folder) is entered only
// provisionally: it is not listed, and once every request about it has
// been refused the entry and whatever those requests left in its folder
// are removed, so that a refused push or offer leaves no phantom agent
// and no folder behind (docs/PROTOCOL.md §7.3). Nothing is removed once a
// record was written for it: a record fences later offers.
func (n *Node) peerTenant(id string) (*tenant, func(refused bool)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.tenants[id]
	if !ok {
		a = n.newTargetTenant(id)
		a.peer.provisional = !exists(n.fsys, a.dir)
		n.tenants[id] = a
	}
	a.peer.refs++
	return a, func(refused bool) { n.releasePeer(a, refused) }
}

// releasePeer ends one peer request of a (see peerTenant).
func (n *Node) releasePeer(a *tenant, refused bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	u := &a.peer
	u.refs--
	if !refused {
		u.provisional = false
	}
	if u.refs > 0 || !u.provisional {
		return
	}
	u.provisional = false
	if exists(n.fsys, a.path(record.HolderFile)) || exists(n.fsys, a.path(record.SourceFile)) {
		return
	}
	delete(n.tenants, a.id)
	if err := n.fsys.RemoveAll(a.dir); err != nil {
		n.log.Warn("refused request's leftovers not removed", "agent", a.id, "folder", a.dir, "err", err)
	}
}

// newTargetTenant is the entry for an agent this node knows nothing of yet.
func (n *Node) newTargetTenant(id string) *tenant {
	a := n.newTenant(id)
	a.holder = transfer.NewTarget(id, string(n.id))
	return a
}

// refusedReply reports whether a peer request's replies refuse it.
func refusedReply(reply *transfer.Message) bool {
	return reply != nil && reply.Type == transfer.MsgRefused
}

// refusedReplies reports whether the replies a push stream's message got
// refuse it.
func refusedReplies(ms []api.Message) bool {
	for _, m := range ms {
		if m.Call == string(transfer.MsgRefused) {
			return true
		}
	}
	return false
}
