package node

import (
	"fmt"
	"sort"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
)

func (n *Node) writer() manifest.Writer {
	return manifest.Writer{Release: schema.Release, Commit: n.cfg.Commit}
}

func (n *Node) sourceConfig() transfer.SourceConfig {
	return transfer.SourceConfig{Policy: n.cfg.Policy, Retries: n.cfg.Retries, AbortRetries: n.cfg.AbortRetries}
}

func (n *Node) sortedTenants() []*tenant {
	out := make([]*tenant, 0, len(n.tenants))
	for _, a := range n.tenants {
		if !a.peer.provisional {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// getTenant returns the agent with the given ID, or an error wrapping api.ErrNotFound.
func (n *Node) getTenant(id string) (*tenant, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.tenants[id]
	if !ok {
		return nil, fmt.Errorf("%w: agent %s", api.ErrNotFound, id)
	}
	return a, nil
}

// targetTenant returns the agent for an incoming request, creating an entry
// for an agent this node has never seen (it persists nothing until the
// Target asks it to).
func (n *Node) targetTenant(id string) *tenant {
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.tenants[id]
	if !ok {
		a = n.newTargetTenant(id)
		n.tenants[id] = a
	}
	return a
}
