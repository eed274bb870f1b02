package node

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// What the node and each tenant hold, declared in one place below the
// code that uses it: Node (the daemon's state), tenant (one agent's
// record) with its two role parts, sourceSide and targetSide
// (source_run.go, target_state.go), and the order their locks are taken.

// Node is a running Capsule node.
type Node struct {
	cfg     Config
	fsys    vfs.FS
	clock   Clock
	log     *slog.Logger
	key     *Key
	id      ID
	cert    tls.Certificate
	peers   *Peers
	secrets *Secrets
	models  modelClients // the default provider clients (Config.Providers unset)
	m       *metrics

	mu      sync.Mutex
	tenants map[string]*tenant
	clients map[ID]*api.PeerClient

	addr        string
	metricsAddr string
	host        *capsule.Host // this process's lock of the data folder
	started     string        // when it took it (RFC 3339)
	sockInfo    os.FileInfo   // the socket this node created, nil if none
	servers     []*http.Server
	ready       atomic.Bool
	readiness   atomic.Pointer[api.Readiness] // the canary pass (canary.go); nil before Start
	closed      atomic.Bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// closing counts agents' tools closing in the background
	// (stopRunnerLocked); Close waits for it after wg.
	closing sync.WaitGroup

	hooks        nodeHooks
	shadowsTaken atomic.Int64 // incoming moves staged from a shadow (tests read it)
}

// nodeHooks let tests and benchmarks act at fixed points of a move; the
// zero value does nothing.
type nodeHooks struct {
	// beforeFreeze runs on the source when pre-copy ended, before the
	// frozen window opens (the agent still runs).
	beforeFreeze func(agent string)
	// render replaces wire.Render in a target's prepare.
	render renderFunc
	// woken runs after a say or set model woke the agent's runner.
	woken func(agent string)
	// haltAsked runs when a stop or a freeze has asked the runner to halt
	// at its next step boundary, before it waits for it.
	haltAsked func(agent string)
}

// tenant is the node's record of one agent it knows: held and maybe
// running, or known only as a target (epochs seen, an incoming move), or
// retired. (The word "agent" names what users know, and package agent the
// LLM loop; a node hosts tenants.) What belongs to one side of a move
// lives apart: src, the source side of this node's latest outgoing move,
// and tgt, the target side of an incoming one. Both are set when the
// tenant is made and never replaced, so code that holds no lock may follow
// the pointers; their fields are guarded as documented there.
//
// Locks, in the order they are taken (never the reverse): Node.mu, then
// tenant.mu, then tenant.stepMu, then moveRun.mu; cache.mu and wire.mu
// are leaves, taken with or without the others and holding none.
type tenant struct {
	n   *Node
	id  string
	dir string

	// mu serializes protocol steps and lifecycle changes of the agent; it
	// guards every field below up to stepMu, and those of src and tgt
	// unless they say otherwise.
	mu          sync.Mutex
	holder      *transfer.Target // the holder record (holder.jsonl): epochs seen, held or not
	meta        record.Meta
	log         *agentlog.Log        // open while this node holds the agent
	run         *runLoop             // non-nil while the runner runs
	blocked     error                // why the agent may not run here (fail closed)
	metaRefused error                // agent.json is a version this release does not read: never written over
	lastErr     atomic.Value         // string: the runner's last error (no lock)
	baseURL     atomic.Value         // string: meta.BaseURL, for the runner (no lock)
	cache       store.StatCache      // the workspace's stat cache (own lock)
	attach      agentlog.Attachments // attachments of the journal
	wire        wireState            // delta bases, for both sides of a move (own lock; delta.go)
	peer        peerUse              // peer requests in flight (peeragent.go); guarded by Node.mu
	src         *sourceSide          // never nil
	tgt         *targetSide          // never nil
	watch       hub                  // watchers of the agent (own lock; watch.go)
	effectsView effectView           // approvals and effects status shows (own lock; effect.go)

	// stepMu is held for the whole of each runner step; taking it waits for
	// a step boundary.
	stepMu     sync.Mutex
	stepWanted atomic.Int32 // lockStepWithin callers waiting: the runner yields to them
	steps      atomic.Uint64
}

// peerUse counts the peer requests in flight for one agent, so that an
// agent this node did not know is forgotten again when every request
// about it was refused. Guarded by Node.mu.
type peerUse struct {
	refs int
	// provisional: the entry was made for a peer request while the node
	// had no entry and no folder for the agent, and no request about it
	// has been accepted since.
	provisional bool
}
