package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Files and folders of an agent's folder DATA/agents/<agentID>/.
const (
	agentMetaFile = "agent.json"     // name and whether the operator wants it running
	capsuleDir    = "capsule"        // the capsule folder, while this node holds the agent
	workDir       = "work"           // the materialized workspace the runner changes
	casDir        = "cas"            // pre-copied blobs (content-addressed, harmless)
	incomingFile  = "incoming.jsonl" // the journal copy a move into this node builds
	stagingDir    = "staging"        // staging/<moveID>/: one incoming move's capsule and workspace
	freshDir      = "fresh"          // verified, unsynced blobs a prepare brought (store.Pending.FinishUnsynced)
	statCacheFile = "statcache.json" // the saved stat cache of work (store.StatCache.SaveFile)
	journalInCap  = manifest.JournalPath
)

// ErrNotHeld is returned for an operation that needs this node to hold the agent.
var ErrNotHeld = errors.New("node: agent not held here")

// agentMeta is DATA/agents/<id>/agent.json.
type agentMeta struct {
	Name string `json:"name,omitempty"`
	Run  bool   `json:"run"` // the operator wants it running (start/stop)
	// Removed is set by `capsule agent rm`: the operator removed the copy
	// while the node had seen epochs up to RemovedAt. The agent is listed
	// again once the node sees a newer epoch (a move brings it back).
	Removed   bool   `json:"removed,omitempty"`
	RemovedAt uint64 `json:"removed_at,omitempty"`
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
	mu      sync.Mutex
	holder  *transfer.Target // the holder record (holder.jsonl): epochs seen, held or not
	meta    agentMeta
	log     *eventLog       // open while this node holds the agent
	run     *runLoop        // non-nil while the runner runs
	blocked error           // why the agent may not run here (fail closed)
	lastErr atomic.Value    // string: the runner's last error (no lock)
	cache   store.StatCache // the workspace's stat cache (own lock)
	attach  attachIndex     // attachments of the journal
	wire    wireState       // delta bases, for both sides of a move (own lock; delta.go)
	peer    peerUse         // peer requests in flight (peeragent.go); guarded by Node.mu
	src     *sourceSide     // never nil
	tgt     *targetSide     // never nil

	// stepMu is held for the whole of each runner step; taking it waits for
	// a step boundary.
	stepMu sync.Mutex
	steps  atomic.Uint64
}

// sourceSide is the source side of this node's latest move of the agent
// (move.go, record.go, delta.go). Guarded by tenant.mu.
type sourceSide struct {
	machine *transfer.Source // the latest move's state machine (source.json), or nil
	move    *moveRun         // the latest move this node started, or nil
}

// targetSide is the target side of a move of the agent into this node and
// the caches of what earlier moves brought (incoming.go, staging.go,
// shadow.go, target.go). Guarded by tenant.mu.
type targetSide struct {
	inc     *incomingLog // the journal copy, in memory
	in      *inMove      // the incoming move being staged
	shadow  *shadowMem   // shadow.json and its snapshot, in memory
	ahead   *aheadRender // the journal copy's render, started ahead of the prepare
	snaps   snapMemo     // the snapshot.json parsed last
	snapPre snapAhead    // a snapshot.json of a push being parsed in the background (own lock)
	att     attachIndex  // attachments of the journal copy
}

// newTenant returns the record of agent id, empty: no holder record yet.
func (n *Node) newTenant(id string) *tenant {
	return &tenant{n: n, id: id, dir: filepath.Join(n.cfg.Dir, "agents", id), src: &sourceSide{}, tgt: &targetSide{}}
}

type runLoop struct {
	stop chan struct{}
	done chan struct{}
}

func (a *tenant) path(elem ...string) string {
	return filepath.Join(append([]string{a.dir}, elem...)...)
}

func (a *tenant) capsule() string { return a.path(capsuleDir) }
func (a *tenant) work() string    { return a.path(workDir) }
func (a *tenant) cas() store.Disk { return store.Disk{FS: a.n.fsys, Dir: a.path(casDir)} }

// persist makes records durable, in order: the transfer package's one rule.
func (a *tenant) persist(recs []transfer.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := vfs.MkdirAllDurable(a.n.fsys, a.dir, 0o700); err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	for _, rec := range recs {
		name := SourceFile
		if rec.Target != nil {
			name = HolderFile
		}
		if err := saveRecord(a.n.fsys, a.path(name), Sign(a.n.key, rec)); err != nil {
			return err
		}
	}
	return nil
}

func (a *tenant) saveMeta() error {
	b, err := json.MarshalIndent(a.meta, "", "  ")
	if err != nil {
		return err
	}
	return vfs.WriteFile(a.n.fsys, a.path(agentMetaFile), append(b, '\n'), 0o600)
}

// stepTarget feeds in to the agent's Target and persists its records. On a
// persist failure the Target is rolled back and nothing of the Ready is done.
func (a *tenant) stepTarget(in transfer.Input) (transfer.Ready, error) {
	rd := a.holder.Step(in)
	if err := a.persist(rd.Records); err != nil {
		a.holder.Step(transfer.Input{Kind: transfer.InPersistFailed})
		return transfer.Ready{}, err
	}
	return rd, nil
}

// wallTime is the informational time of journal events.
func (n *Node) wallTime() string { return n.clock.Now().UTC().Format(time.RFC3339Nano) }

// loadTenant rebuilds an agent from its folder, failing closed: an agent
// whose holder record is missing or invalid is known but blocked.
func (n *Node) loadTenant(id string) *tenant {
	a := n.newTenant(id)
	// Unsynced blobs of a process that stopped: a crash may have torn them.
	_ = n.fsys.RemoveAll(a.path(freshDir))
	if b, err := vfs.ReadFile(n.fsys, a.path(agentMetaFile)); err == nil {
		_ = json.Unmarshal(b, &a.meta)
	}
	t, err := LoadTarget(n.fsys, a.path(HolderFile), n.id, id)
	if errors.Is(err, ErrNoHolder) && !exists(n.fsys, a.capsule()) {
		// Only pre-copied blobs arrived: no promise was ever made for this
		// agent, so there is nothing to fence and nothing to run.
		a.holder = transfer.NewTarget(id, string(n.id))
		return a
	}
	if err != nil {
		a.blocked = err
		a.holder = transfer.NewTarget(id, string(n.id))
		return a
	}
	a.holder = t
	if t.Holder() > 0 {
		if k, err := a.cache.LoadFile(a.n.fsys, a.path(statCacheFile), a.work()); err != nil {
			n.log.Warn("stat cache not loaded", "agent", id, "err", err)
		} else if k > 0 {
			n.log.Debug("stat cache loaded", "agent", id, "files", k)
		}
	}
	return a
}

func exists(fsys vfs.FS, path string) bool {
	_, err := fsys.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// ctxDone reports whether ctx is cancelled.
func ctxDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}
