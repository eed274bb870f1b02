// Package node is the Capsule daemon: it hosts agents under a data folder,
// runs each through a Runner, and moves them to other nodes by driving the
// sans-IO machines of package transfer over mutual TLS with pinned node IDs.
//
// A node's identity is an ed25519 key created on first start
// (DATA/node.key, mode 0600); its ID is derived from the public key
// (package node/ident). The CLI talks to the node through the local API on a unix socket
// (DATA/node.sock, mode 0600); nodes talk through the peer API, where both
// ends present self-signed certificates and each checks the other's derived
// ID during the handshake.
//
// The node takes its file system, clock, entropy and peer transport by
// injection (Config), so tests run it on vfs.Mem or vfs.Faulty and wrap the
// transport to lose requests or replies. Only cmd/capsule imports it.
//
// Data folder layout:
//
//	node.key                 the node key (PEM PKCS#8, 0600)
//	node.lock                flock'd by the one node process serving the folder (capsule.LockHost)
//	node.lock.json           that process's record: node ID, PID, addresses (capsule.HostRecord)
//	peers.json               trusted peers: ID and address
//	secrets.json             the file secret store, when used (package secret; must be 0600)
//	node.sock                the local API socket (0600)
//	agents/<agentID>/
//	  holder.jsonl           log of signed transfer.Target records, newest last: the holder record
//	  source.jsonl           log of signed transfer.Source records of the latest move
//	  agent.json             name, and whether the operator wants it running
//	  capsule/               the capsule folder, while this node holds the agent
//	  work/                  the workspace the runner changes
//	  cas/                   pre-copied blobs (content-addressed, verified on receipt)
//	  incoming.jsonl         the journal copy an incoming move builds
//	  shadow/                the next incoming move's staging, built during pre-copy:
//	    capsule/             layout files of the last pre-copy round (no blobs, no journal)
//	    work/                its workspace, a checkout of that round's snapshot
//	  shadow.json            which manifest the shadow reflects (absent: no shadow)
//	  staging/<moveID>/      the staged capsule and workspace of an incoming move
//
// A move keeps O(workspace) and O(journal) work out of its frozen window:
// the source records the workspace with a stat cache and builds the frozen
// manifest in memory (source_inventory.go, store.RecordWork); the target
// verifies blobs as they arrive (store.Disk), keeps its journal copy open
// with a running digest (target_incoming.go), builds the shadow during
// pre-copy (target_shadow.go, store.Checkout), and stages a move by
// renaming the shadow, the CAS store and the journal copy into place and
// applying only what changed, made durable in one batch of concurrent
// syncs (target_stage.go, store.Batch).
//
// Where things are. Files are named for the role they serve, and read
// top-down: no file refers to one above it (the type-checked graph of the
// package's files has no cycle). Below the package sit node/ident (the
// node's key, ID and certificate), node/record (the signed record logs
// holder.jsonl and source.jsonl, and agent.json), node/agentlog (an
// agent's journal as the node writes it, its checked open and its
// attachment index) and node/store; none of them imports node. At the bottom of node, state.go declares what the
// Node and each tenant hold and the order their locks are taken, layout.go
// the names in an agent's folder, node_env.go the Node helpers tenants
// use. The roles still share package node, so one role's file may call
// another's (the source's retire hands the workspace to the target side's
// cache, for instance):
//
//   - The daemon: node.go (New, start and stop), config.go, local.go (the
//     local API's handlers), peers.go, peerclient.go, peerconn.go,
//     ident.go (the API's names of node/ident), tls.go, secrets.go,
//     metrics.go, report.go, capsule.go, render.go.
//   - Hosting one agent (tenant*.go): the tenant's folder, records and
//     loading (tenant.go), lifecycle and runner loop (tenant_run.go,
//     tenant_runner.go), status (tenant_status.go), workspace
//     record (tenant_record.go), recovery at start
//     (tenant_recover.go), removal and peer use.
//   - The source side of a move (source_*.go), state tenant.src
//     (sourceSide, source_run.go): the driver (source_move.go), freeze and
//     retire (source_freeze.go), inventories (source_inventory.go), pushes
//     (source_push.go), delta frames it sends (source_delta.go) and the
//     latest move's history (source_history.go).
//   - The target side of a move (target_*.go), state tenant.tgt
//     (targetSide, target_state.go): messages (target_message.go), pushes
//     received (target_push.go), the journal copy (target_append.go,
//     target_incoming.go), staging, prepare, promotion and reclaim
//     (target_stage.go, target_prepare.go, target_promote.go,
//     target_reclaim.go), the shadow (target_shadow.go), delta bases
//     (target_delta.go) and the render ahead of a prepare
//     (target_render.go).
//   - The content-addressed store, stat cache, checkout engine, durable
//     batches and delta encoding: package node/store, which knows nothing
//     of agents or moves.
package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

var (
	_ api.LocalService = (*Node)(nil)
	_ api.PeerService  = (*Node)(nil)
)

// New opens the node's data folder (creating it and the key on first
// start), locks it for this node's lifetime (a second node of the same
// folder is refused with a *capsule.HeldError naming the first: its ID,
// PID and addresses), loads its peers, secrets and agents, and recovers
// every move it had in progress. It does not listen or run agents until
// Start.
func New(cfg Config) (*Node, error) {
	if cfg.Dir == "" {
		return nil, errors.New("node: a data folder is required")
	}
	cfg.defaults()
	n := &Node{cfg: cfg, fsys: cfg.FS, clock: cfg.Clock, log: cfg.Logger, m: newMetrics(),
		tenants: map[string]*tenant{}, clients: map[ID]*api.PeerClient{}}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := vfs.MkdirAllDurable(n.fsys, cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("node: data folder: %w", err)
	}
	n.started = n.clock.Now().UTC().Format(time.RFC3339)
	var err error
	if n.host, err = capsule.LockHost(n.fsys, cfg.Dir, n.hostRecord()); err != nil {
		var he *capsule.HeldError
		if errors.As(err, &he) {
			return nil, err // names the folder and the node: no prefix
		}
		return nil, fmt.Errorf("node: %w", err)
	}
	if err := n.open(); err != nil {
		_ = n.host.Release()
		return nil, err
	}
	return n, nil
}

// hostRecord is the record of this process kept beside the data folder's lock.
func (n *Node) hostRecord() capsule.HostRecord {
	r := capsule.HostRecord{V: schema.Current[schema.Coordination], Release: schema.Release, Node: string(n.id),
		PID: os.Getpid(), Listen: n.addr, Started: n.started}
	if n.sockInfo != nil {
		r.Socket = n.cfg.Socket
	}
	return r
}

// open loads the key, the peers, the secrets and the agents.
func (n *Node) open() error {
	cfg := n.cfg
	var err error
	if n.key, err = LoadOrCreateKey(n.fsys, cfg.Dir, cfg.Entropy); err != nil {
		return err
	}
	n.id = n.key.ID()
	if n.cert, err = n.key.Certificate(); err != nil {
		return err
	}
	if n.peers, err = OpenPeers(n.fsys, cfg.Dir); err != nil {
		return err
	}
	if n.cfg.Providers == nil {
		n.cfg.Providers = n.models.get
	}
	if n.secrets, err = OpenSecretStore(n.fsys, cfg.Dir, cfg.SecretStore, cfg.Getenv); err != nil {
		return err
	}
	n.log = n.log.With("node", string(n.id.Short()))
	if err := n.host.Update(n.hostRecord()); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return n.loadAgents()
}

// ID returns the node's ID.
func (n *Node) ID() ID { return n.id }

// Addr returns the address the peer API listens on ("" before Start or
// without Config.Listen).
func (n *Node) Addr() string { return n.addr }

// MetricsAddr returns the address /metrics is served on ("" if none).
func (n *Node) MetricsAddr() string { return n.metricsAddr }

// PeerList returns the node's peer list.
func (n *Node) PeerList() *Peers { return n.peers }

func (n *Node) loadAgents() error {
	dir := filepath.Join(n.cfg.Dir, "agents")
	// Made now, so that what a refused peer request made for an agent the
	// node did not know can be removed whole (peeragent.go).
	if err := vfs.MkdirAllDurable(n.fsys, dir, 0o700); err != nil {
		return fmt.Errorf("node: agents: %w", err)
	}
	ents, err := n.fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("node: agents: %w", err)
	}
	for _, e := range ents {
		switch {
		case !e.IsDir():
		case api.CheckID(api.AgentID, e.Name()) != nil: // never an agent: kept, not loaded
			n.log.Warn("not an agent folder: its name is not an agent ID; left as it is", "folder", filepath.Join(dir, e.Name()))
		default:
			n.tenants[e.Name()] = n.loadTenant(e.Name())
		}
	}
	return nil
}

// Start serves the peer API (Config.Listen), the local API (Config.Socket)
// and metrics (Config.MetricsAddr), runs the canary pass (canary.go), and,
// when it passes, finishes interrupted moves, starts every agent this node
// holds that the operator wants running, and reports ready. A failed pass
// is no error: the node serves, not ready, with every agent stopped.
func (n *Node) Start() error {
	n.readiness.Store(&api.Readiness{Reason: "starting: canary pass under way"})
	if n.cfg.Listen != "" {
		if err := n.listenPeers(); err != nil {
			return err
		}
	}
	if n.cfg.Socket != "-" {
		if err := n.listenLocal(); err != nil {
			return err
		}
	}
	if n.cfg.MetricsAddr != "" {
		ln, err := net.Listen("tcp", n.cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("node: metrics: %w", err)
		}
		n.metricsAddr = ln.Addr().String()
		if err := n.serveOn(ln, n.m.handler(n.ready.Load, n.readiness.Load)); err != nil {
			return err
		}
	}
	if err := n.host.Update(n.hostRecord()); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	rd := n.canaryPass()
	if !rd.Ready {
		n.applyReadiness(rd)
		return nil
	}
	n.recover()
	n.applyReadiness(rd) // offers are accepted from here on
	n.ready.Store(true)
	return nil
}

func (n *Node) listenPeers() error {
	cfg := ServerTLS(n.cert, n.knownPeer)
	ln, err := net.Listen("tcp", n.cfg.Listen)
	if err != nil {
		return fmt.Errorf("node: listen: %w", err)
	}
	n.addr = ln.Addr().String()
	return n.serveOn(tls.NewListener(ln, cfg), n.PeerHandler())
}

// listenLocal serves the local API on the socket. The data folder's lock
// makes this the only node of the folder, so a socket file at the path is
// a stale one of an earlier run, unless a process answers on it (a custom
// Config.Socket another node uses): then it is refused, not removed.
func (n *Node) listenLocal() error {
	sock := n.cfg.Socket
	if c, err := net.Dial("unix", sock); err == nil {
		c.Close()
		return fmt.Errorf("node: local socket %s: another process is listening on it", sock)
	}
	_ = os.Remove(sock) // a stale socket of a previous run
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("node: local socket: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // Close removes it only if it is still ours
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("node: local socket: %w", err)
	}
	if n.sockInfo, err = os.Stat(sock); err != nil {
		ln.Close()
		return fmt.Errorf("node: local socket: %w", err)
	}
	return n.serveOn(ln, api.NewLocalHandler(n))
}

// removeSocket removes the local API socket if it is still the one this
// node created: never another process's.
func (n *Node) removeSocket() {
	if n.sockInfo == nil {
		return
	}
	if fi, err := os.Stat(n.cfg.Socket); err == nil && os.SameFile(fi, n.sockInfo) {
		_ = os.Remove(n.cfg.Socket)
	}
}

func (n *Node) serveOn(ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ErrorLog: slog.NewLogLogger(n.log.Handler(), slog.LevelDebug), ReadHeaderTimeout: 10 * time.Second}
	n.mu.Lock()
	n.servers = append(n.servers, srv)
	n.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// PeerHandler returns the peer API handler; it identifies callers by the
// certificate they presented in the TLS handshake.
func (n *Node) PeerHandler() http.Handler {
	return api.NewPeerHandler(n, func(r *http.Request) (string, error) {
		if r.TLS == nil {
			return "", fmt.Errorf("%w: not a TLS connection", ErrPeerRefused)
		}
		id, err := PeerID(r.TLS.PeerCertificates)
		if err != nil {
			return "", err
		}
		if !n.peers.Known(id) {
			return "", &PeerIDError{Got: id}
		}
		return string(id), nil
	})
}

// Close shuts the node down gracefully: it stops accepting requests,
// freezes every running agent at a step boundary (journal synced, capsule
// committed, the freeze journaled), and waits for its goroutines. Agents
// the operator wanted running start again on the next Start.
func (n *Node) Close(ctx context.Context) error {
	if !n.closed.CompareAndSwap(false, true) {
		return nil
	}
	n.ready.Store(false)
	n.mu.Lock()
	servers := n.servers
	agents := n.sortedTenants()
	n.mu.Unlock()
	n.endWatches() // an open watch would hold its server's Shutdown
	for _, s := range servers {
		_ = s.Shutdown(ctx)
	}
	var errs []error
	for _, a := range agents {
		a.mu.Lock()
		if err := a.stopLocked("node shutdown"); err != nil {
			errs = append(errs, err)
		}
		if a.holder.Holder() > 0 && a.blocked == nil { // held here: the next start hashes only what changed
			if err := a.cache.SaveFile(a.n.fsys, a.path(statCacheFile), a.work()); err != nil {
				n.log.Warn("stat cache not saved", "agent", a.id, "err", err)
			}
		}
		if a.log != nil {
			_ = a.log.Close()
		}
		a.dropIncoming()
		a.tgt.in.closeLog()
		a.mu.Unlock()
	}
	n.cancel()
	n.wg.Wait()
	n.closing.Wait() // no tool process outlives the node
	n.removeSocket()
	if err := n.host.Release(); err != nil {
		errs = append(errs, fmt.Errorf("node: release the data folder: %w", err))
	}
	n.log.Info("node stopped")
	return errors.Join(errs...)
}
