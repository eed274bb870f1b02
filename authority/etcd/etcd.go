// Package etcd is the authority.Authority and authority.Directory on an
// etcd cluster (go.etcd.io/etcd/client/v3), for fleet mode (PROTOCOL
// "Fleet mode"). Every write is one etcd transaction that compares the
// key's value and mod revision; no lock, election or lease decides
// anything here (Jepsen found etcd's locks unsafe for mutual exclusion).
// Leases only tell which nodes are alive.
//
// Keys, under the configured prefix (default /capsule):
//
//	PREFIX/agents/ID     an agent's holder, epoch and state (authority.Holding)
//	PREFIX/dir/nodes/ID     a node's registration, kept after its lease ends
//	PREFIX/dir/alive/ID     bound to the node's lease: present while it is reachable
//	PREFIX/dir/admitted/ID  the operator's admission
//	PREFIX/dir/cordoned/ID  the operator's cordon
//
// The node and the capsule commands import it; it owns no state of its
// own beyond the client it is given.
package etcd

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/agentcapsule/capsule/authority"
)

// DefaultPrefix is where keys live when Config.Prefix is empty.
const DefaultPrefix = "/capsule"

// Config says which cluster and where in it.
type Config struct {
	// Client is connected to the cluster; the caller closes it.
	Client *clientv3.Client
	// Prefix is prepended to every key; DefaultPrefix when empty.
	Prefix string
}

// Authority is the agents' keys on etcd.
type Authority struct {
	cli    *clientv3.Client
	prefix string
}

var _ authority.Authority = (*Authority)(nil)

// New returns the Authority of cfg.
func New(cfg Config) *Authority {
	return &Authority{cli: cfg.Client, prefix: prefixOf(cfg.Prefix)}
}

func prefixOf(p string) string {
	if p == "" {
		p = DefaultPrefix
	}
	return strings.TrimRight(p, "/")
}

func (a *Authority) key(agent string) string { return a.prefix + "/agents/" + agent }

// Get returns the agent's key, read linearizably.
func (a *Authority) Get(ctx context.Context, agent string) (authority.Entry, error) {
	resp, err := a.cli.Get(ctx, a.key(agent))
	if err != nil {
		return authority.Entry{}, fmt.Errorf("authority/etcd: get %s: %w", agent, err)
	}
	if len(resp.Kvs) == 0 {
		return authority.Entry{}, fmt.Errorf("%w: %s", authority.ErrNotFound, agent)
	}
	return entryOf(agent, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

// Put creates the agent's key holding h, in one transaction that requires
// the key to be absent.
func (a *Authority) Put(ctx context.Context, agent string, h authority.Holding) (authority.Entry, error) {
	if err := authority.CheckWrite(agent, authority.Holding{}, h); err != nil {
		return authority.Entry{}, err
	}
	k := a.key(agent)
	return a.commit(ctx, agent, authority.Entry{}, h, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
}

// CompareAndSwap writes next in one transaction that requires the key's
// value and mod revision to be expect's.
func (a *Authority) CompareAndSwap(ctx context.Context, agent string, expect authority.Entry, next authority.Holding) (authority.Entry, error) {
	if err := authority.CheckWrite(agent, expect.Holding, next); err != nil {
		return authority.Entry{}, err
	}
	k := a.key(agent)
	return a.commit(ctx, agent, expect, next,
		clientv3.Compare(clientv3.Value(k), "=", string(expect.Value)),
		clientv3.Compare(clientv3.ModRevision(k), "=", expect.Revision))
}

// commit runs If(cmps) Then(put next) Else(get): on success the key's new
// mod revision is the transaction's revision; on failure the Else read
// is what the key held at that same instant.
func (a *Authority) commit(ctx context.Context, agent string, expect authority.Entry, next authority.Holding, cmps ...clientv3.Cmp) (authority.Entry, error) {
	b, err := authority.EncodeHolding(agent, next)
	if err != nil {
		return authority.Entry{}, err
	}
	k := a.key(agent)
	resp, err := a.cli.Txn(ctx).If(cmps...).Then(clientv3.OpPut(k, string(b))).Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		// The request may have been applied before the reply was lost.
		return authority.Entry{}, &authority.UnknownOutcomeError{Agent: agent, Next: next, Err: err}
	}
	if resp.Succeeded {
		return authority.Entry{Holding: next, Revision: resp.Header.Revision, Value: b}, nil
	}
	conflict := &authority.ConflictError{Agent: agent, Expect: expect.Holding}
	if expect.Revision == 0 {
		conflict.Expect = next // a Put expected the key absent
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		conflict.Absent = true
		return authority.Entry{}, conflict
	}
	if conflict.Now, err = entryOf(agent, kvs[0].Value, kvs[0].ModRevision); err != nil {
		return authority.Entry{}, err
	}
	return authority.Entry{}, conflict
}

func entryOf(agent string, value []byte, rev int64) (authority.Entry, error) {
	h, err := authority.DecodeHolding(agent, value)
	if err != nil {
		return authority.Entry{}, fmt.Errorf("authority/etcd: %w", err)
	}
	return authority.Entry{Holding: h, Revision: rev, Value: value}, nil
}
