package etcd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/agentcapsule/capsule/authority"
)

// DefaultTTL is how long a node stays reachable after its last lease
// renewal when DirectoryConfig.TTL is zero.
const DefaultTTL = 10 * time.Second

// DirectoryConfig says which cluster, where in it, and the lease's TTL.
type DirectoryConfig struct {
	Config
	// TTL of a registration's lease, rounded up to whole seconds (etcd
	// raises it to its own minimum).
	TTL time.Duration
}

// Directory is the fleet's list of nodes on etcd.
type Directory struct {
	cli    *clientv3.Client
	prefix string
	ttl    int64
}

var _ authority.Directory = (*Directory)(nil)

// The directory's sub-prefixes.
const (
	dirNodes    = "/dir/nodes/"
	dirAlive    = "/dir/alive/"
	dirAdmitted = "/dir/admitted/"
	dirCordoned = "/dir/cordoned/"
)

// NewDirectory returns the Directory of cfg.
func NewDirectory(cfg DirectoryConfig) *Directory {
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	secs := int64((ttl + time.Second - 1) / time.Second)
	return &Directory{cli: cfg.Client, prefix: prefixOf(cfg.Prefix), ttl: secs}
}

func (d *Directory) key(sub, id string) string { return d.prefix + sub + id }

// Register writes info (kept after the lease ends) and the alive key bound
// to a fresh lease, in one transaction, and keeps the lease alive.
func (d *Directory) Register(ctx context.Context, info authority.NodeInfo) (authority.Registration, error) {
	if info.ID == "" || strings.Contains(info.ID, "/") {
		return nil, fmt.Errorf("authority/etcd: register: bad node ID %q", info.ID)
	}
	b, err := authority.EncodeNode(info)
	if err != nil {
		return nil, err
	}
	lease, err := d.cli.Grant(ctx, d.ttl)
	if err != nil {
		return nil, fmt.Errorf("authority/etcd: register %s: grant lease: %w", info.ID, err)
	}
	alive := strconv.FormatInt(int64(lease.ID), 16)
	_, err = d.cli.Txn(ctx).Then(
		clientv3.OpPut(d.key(dirNodes, info.ID), string(b)),
		clientv3.OpPut(d.key(dirAlive, info.ID), alive, clientv3.WithLease(lease.ID)),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("authority/etcd: register %s: %w", info.ID, err)
	}
	kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ch, err := d.cli.KeepAlive(kctx, lease.ID)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("authority/etcd: register %s: keep lease alive: %w", info.ID, err)
	}
	r := &registration{cli: d.cli, lease: lease.ID, cancel: cancel, lost: make(chan struct{})}
	go r.watch(ch)
	return r, nil
}

// registration is one node's lease and its keep-alive.
type registration struct {
	cli    *clientv3.Client
	lease  clientv3.LeaseID
	cancel context.CancelFunc
	lost   chan struct{}
	once   sync.Once
}

// watch drains the keep-alive replies; the channel closes when the lease
// can no longer be renewed.
func (r *registration) watch(ch <-chan *clientv3.LeaseKeepAliveResponse) {
	for range ch {
	}
	close(r.lost)
}

// Lost is closed when the lease is no longer renewed.
func (r *registration) Lost() <-chan struct{} { return r.lost }

// Close stops renewing and revokes the lease: the node is unreachable at
// once rather than after its TTL.
func (r *registration) Close() error {
	var err error
	r.once.Do(func() {
		r.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, e := r.cli.Revoke(ctx, r.lease); e != nil {
			err = fmt.Errorf("authority/etcd: revoke lease %x: %w", int64(r.lease), e)
		}
	})
	return err
}

// List reads the four sub-prefixes in one transaction, so the view is one
// instant's.
func (d *Directory) List(ctx context.Context) ([]authority.Node, error) {
	nodes, _, err := d.list(ctx)
	return nodes, err
}

func (d *Directory) list(ctx context.Context) ([]authority.Node, int64, error) {
	subs := []string{dirNodes, dirAlive, dirAdmitted, dirCordoned}
	ops := make([]clientv3.Op, len(subs))
	for i, s := range subs {
		ops[i] = clientv3.OpGet(d.prefix+s, clientv3.WithPrefix())
	}
	resp, err := d.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, 0, fmt.Errorf("authority/etcd: list nodes: %w", err)
	}
	var infos []authority.NodeInfo
	for _, kv := range resp.Responses[0].GetResponseRange().GetKvs() {
		info, err := authority.DecodeNode(kv.Value)
		if err != nil {
			return nil, 0, fmt.Errorf("authority/etcd: %s: %w", kv.Key, err)
		}
		infos = append(infos, info)
	}
	sets := make([]map[string]bool, 3)
	for i := range sets {
		sets[i] = map[string]bool{}
		for _, kv := range resp.Responses[i+1].GetResponseRange().GetKvs() {
			sets[i][strings.TrimPrefix(string(kv.Key), d.prefix+subs[i+1])] = true
		}
	}
	return authority.Nodes(infos, sets[0], sets[1], sets[2]), resp.Header.Revision, nil
}

// Watch sends the list now and after every change to the directory.
func (d *Directory) Watch(ctx context.Context) (<-chan []authority.Node, error) {
	nodes, rev, err := d.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan []authority.Node, 1)
	out <- nodes
	wch := d.cli.Watch(clientv3.WithRequireLeader(ctx), d.prefix+"/dir/", clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	go d.relay(ctx, wch, out)
	return out, nil
}

// relay lists again after each watch reply and sends the result; it
// closes out when ctx ends or the watch fails.
func (d *Directory) relay(ctx context.Context, wch clientv3.WatchChan, out chan<- []authority.Node) {
	defer close(out)
	for resp := range wch {
		if resp.Err() != nil {
			return
		}
		nodes, _, err := d.list(ctx)
		if err != nil {
			return
		}
		select {
		case out <- nodes:
		case <-ctx.Done():
			return
		}
	}
}

// Admit records the operator's admission of id.
func (d *Directory) Admit(ctx context.Context, id string) error {
	return d.mark(ctx, "admission", dirAdmitted, id)
}

// Cordon records the operator's cordon of id.
func (d *Directory) Cordon(ctx context.Context, id string) error {
	return d.mark(ctx, "cordon", dirCordoned, id)
}

// Uncordon removes the operator's cordon of id; a cordon the node itself
// registered stays until it registers without it.
func (d *Directory) Uncordon(ctx context.Context, id string) error {
	if _, err := d.cli.Delete(ctx, d.key(dirCordoned, id)); err != nil {
		return fmt.Errorf("authority/etcd: uncordon %s: %w", id, err)
	}
	return nil
}

func (d *Directory) mark(ctx context.Context, what, sub, id string) error {
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("authority/etcd: %s: bad node ID %q", what, id)
	}
	b, err := authority.EncodeMark(id)
	if err != nil {
		return err
	}
	if _, err := d.cli.Put(ctx, d.key(sub, id), string(b)); err != nil {
		return fmt.Errorf("authority/etcd: %s %s: %w", what, id, err)
	}
	return nil
}
