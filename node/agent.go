package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentcapsule/capsule/node/store"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
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

// mayRun reports the epoch this node may run the agent at, from its
// durable records alone: a verified holder record and no move keeping it
// frozen (transfer.MayRun).
func (a *tenant) mayRun() (uint64, bool) {
	if a.blocked != nil || a.holder == nil {
		return 0, false
	}
	return transfer.MayRun(a.holder, a.src.machine)
}

// startLocked opens the journal and starts the runner, appending ev (a
// lifecycle event) first. It refuses unless mayRun allows it.
func (a *tenant) startLocked(kind journal.Kind, body any) error {
	if a.run != nil {
		return nil
	}
	epoch, ok := a.mayRun()
	if !ok {
		return fmt.Errorf("%w: %s (%s)", ErrNotHeld, a.id, a.why())
	}
	if err := a.openLog(epoch); err != nil {
		return a.refuse(err)
	}
	if _, err := a.log.Append(kind, epoch, a.n.wallTime(), body); err != nil {
		if errors.Is(err, journal.ErrStaleEpoch) {
			return a.refuse(err)
		}
		return err
	}
	return a.runLocked()
}

// ErrJournalRefused marks an agent the node will not run because its
// journal does not check out: a broken chain, a bad id, an event under an
// epoch above the holder's, a committed prefix that does not match the
// manifest (docs/FORMAT.md §7.7).
var ErrJournalRefused = errors.New("node: journal refused")

// refuse blocks the agent because its journal was refused (err), so that
// status shows why it does not run; `agent start` tries again.
func (a *tenant) refuse(err error) error {
	a.blocked = fmt.Errorf("%w: %w", ErrJournalRefused, err)
	if a.log != nil {
		_ = a.log.Close()
		a.log = nil
	}
	a.n.log.Error("agent blocked: journal refused", "agent", a.id, "err", err)
	return a.blocked
}

// runLocked starts the runner on the open journal, after the lifecycle
// event that says why is durable. It refuses unless mayRun allows it.
func (a *tenant) runLocked() error {
	if a.run != nil {
		return nil
	}
	epoch, ok := a.mayRun()
	if !ok || a.log == nil {
		return fmt.Errorf("%w: %s (%s)", ErrNotHeld, a.id, a.why())
	}
	rl := &runLoop{stop: make(chan struct{}), done: make(chan struct{})}
	a.run = rl
	a.n.wg.Add(1)
	go a.loop(rl, epoch)
	a.n.log.Info("agent running", "agent", a.id, "epoch", epoch)
	return nil
}

// openLog opens the journal for appending under epoch, or re-fences the
// open one at epoch. A journal is opened only after its committed prefix
// matches the manifest (checkJournal); one that holds an event under an
// epoch above the holder's is refused.
func (a *tenant) openLog(epoch uint64) error {
	if a.log != nil {
		a.log.Fence(epoch)
		return nil
	}
	m, err := checkJournal(a.n.fsys, a.capsule())
	if err != nil {
		return err
	}
	l, err := openEventLog(a.n.fsys, filepath.Join(a.capsule(), journalInCap), string(a.n.id), epoch, m.Journal.Bytes)
	if err != nil {
		return err
	}
	if fence := l.Epoch(); fence > epoch {
		_ = l.Close()
		return fmt.Errorf("%w: the journal holds an event under epoch %d, above the holder epoch %d", journal.ErrStaleEpoch, fence, epoch)
	}
	for _, q := range l.Quarantined() {
		a.n.log.Warn("journal: torn last line set aside", "agent", a.id, "file", q.Path, "line", q.Line, "reason", q.Reason)
	}
	a.log = l
	return nil
}

func (a *tenant) why() string {
	src := a.currentSource()
	switch {
	case a.blocked != nil:
		return a.blocked.Error()
	case a.holder == nil || a.holder.Holder() == 0:
		return "no holder epoch on this node"
	case src != nil && src.Frozen():
		return "frozen by move " + src.State().Move + " (" + src.Phase() + ")"
	}
	return "not running"
}

// currentSource returns this node's latest move of the agent if it
// concerns the agent as this node holds it now, or held it last: nil when
// there is none, or when the agent has come back since (docs/PROTOCOL.md
// §7.3): the move of a round trip's first leg is history once the target
// record holds the agent at a newer epoch.
func (a *tenant) currentSource() *transfer.Source {
	if a.src.machine == nil || a.holder == nil || sourceIsHistory(a.src.machine.State(), a.holder) {
		return nil
	}
	return a.src.machine
}

// sourceIsHistory reports whether a source record st of this node is older
// than the holding the target record t grants: t holds the agent at or
// above the move's epoch (the agent came back, or a force adopted a newer
// epoch). While t holds the agent below st.Epoch the record is current
// whatever MaxEpoch says: a holder can burn epochs (an abort of an offer
// it refused) in the middle of its own move. While t holds nothing the
// record is the move the agent left in, and names its successor.
func sourceIsHistory(st transfer.SourceState, t *transfer.Target) bool {
	h := t.Holder()
	return h > 0 && st.Epoch <= h
}

// mayReplay reports whether the recovery of source record st may act:
// not when the record is history, and not when t released the agent and
// has seen an epoch above the move's since (a move back was promised): the
// retire finished before, and nothing is ever removed on the strength of a
// record older than the newest the node knows of.
func mayReplay(st transfer.SourceState, t *transfer.Target) bool {
	return !sourceIsHistory(st, t) && !(t.Holder() == 0 && t.MaxEpoch() > st.Epoch)
}

// stopLocked stops the runner at a step boundary, journals why, and commits
// the capsule (workspace snapshot, journal summary, holder) so that what is
// on disk is complete. It is a no-op when the runner is not running.
func (a *tenant) stopLocked(reason string) error {
	if stopped, err := a.haltLocked(reason); !stopped || err != nil {
		return err
	}
	return a.commitLocked()
}

// haltLocked stops the runner at a step boundary and journals why (the
// event is durable when it returns). It reports whether the runner was
// running.
func (a *tenant) haltLocked(reason string) (bool, error) {
	if a.run == nil {
		return false, nil
	}
	close(a.run.stop)
	<-a.run.done
	a.run = nil
	epoch := a.holder.Holder()
	if _, err := a.log.Append(journal.KindFrozen, epoch, a.n.wallTime(), journal.Frozen{Reason: reason}); err != nil {
		return true, err
	}
	a.n.log.Info("agent frozen", "agent", a.id, "epoch", epoch, "reason", reason)
	return true, nil
}

// commitLocked records the workspace into the capsule (blobs first, only
// files changed since the last record are hashed) and commits the manifest
// with this node as holder and the journal summary.
func (a *tenant) commitLocked() error {
	c, err := capsule.Open(a.n.fsys, a.capsule(), capsule.Config{Writer: a.n.writer()})
	if err != nil {
		return fmt.Errorf("commit %s: %w", a.id, err)
	}
	rec, err := a.record()
	if err == nil {
		err = a.storeRecord(c.Blobs(), rec)
	}
	if err != nil {
		return fmt.Errorf("commit %s: %w", a.id, err)
	}
	holder := manifest.Holder{Node: string(a.n.id), Epoch: a.holder.Holder()}
	if err := commitCapsule(c, rec.Snap, holder, a.log.Summary()); err != nil {
		return fmt.Errorf("commit %s: %w", a.id, err)
	}
	return nil
}

// commitHolderLocked commits the holder and the journal summary without
// recording the workspace again (it was just checked out from the capsule).
func (a *tenant) commitHolderLocked() error {
	holder := manifest.Holder{Node: string(a.n.id), Epoch: a.holder.Holder()}
	if err := commitHolder(a.n.fsys, a.capsule(), holder, a.log.Summary(), a.n.writer()); err != nil {
		return fmt.Errorf("commit %s: %w", a.id, err)
	}
	return nil
}

// loop runs the runner until stop is closed, one step at a time.
func (a *tenant) loop(rl *runLoop, epoch uint64) {
	defer a.n.wg.Done()
	defer close(rl.done)
	var step uint64
	for {
		select {
		case <-rl.stop:
			return
		case <-a.n.clock.After(a.n.cfg.StepInterval):
		}
		select {
		case <-rl.stop:
			return
		default:
		}
		step++
		if err := a.step(epoch, step); err != nil {
			a.n.log.Warn("runner step failed", "agent", a.id, "epoch", epoch, "err", err)
			if errors.Is(err, journal.ErrStaleEpoch) {
				return // fenced off: never write under an old epoch
			}
		}
	}
}

func (a *tenant) step(epoch, step uint64) error {
	a.stepMu.Lock()
	defer a.stepMu.Unlock()
	env := &StepEnv{Agent: a.id, Node: a.n.id, Epoch: epoch, Step: step, FS: a.n.fsys, Workdir: a.work(), Now: a.n.clock.Now(),
		Append: func(kind journal.Kind, body any) (journal.Event, error) {
			return a.log.Append(kind, epoch, a.n.wallTime(), body)
		}}
	if err := a.n.cfg.Runner.Step(a.n.ctx, env); err != nil {
		a.lastErr.Store(err.Error())
		return err
	}
	a.steps.Add(1)
	a.n.m.steps.Inc()
	return nil
}

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
	if src != nil && a.src.move != nil && a.src.move.id == src.State().Move {
		ms := a.src.move.status()
		st.Move = &ms
	}
	return st
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

// recoverSource rebuilds the agent's latest move from source.json, if any,
// and returns the Ready the host must execute now.
func (a *tenant) recoverSource() (transfer.Ready, bool, error) {
	rec, err := loadRecord(a.n.fsys, a.path(SourceFile), a.n.id, a.id)
	var st *transfer.SourceState
	switch {
	case err == nil:
		st = rec.Record.Source
	case !errors.Is(err, ErrNoHolder):
		return transfer.Ready{}, false, err
	}
	if err := a.checkCapsule(st); err != nil {
		return transfer.Ready{}, false, err
	}
	if st == nil || sourceIsHistory(*st, a.holder) {
		// No move, or the agent left in that move and has come back since:
		// the record is history. Replaying it would retire the live
		// capsule (and freeze an agent this node holds).
		return transfer.Ready{}, false, nil
	}
	src, rd, err := transfer.RecoverSource([]transfer.Record{rec.Record}, a.n.sourceConfig())
	if err != nil {
		return transfer.Ready{}, false, err
	}
	a.src.machine = src // it names the successor, replayed or not
	if !mayReplay(*st, a.holder) {
		return transfer.Ready{}, false, nil
	}
	return rd, true, nil
}

// ErrRecordBehind marks an agent whose capsule folder shows a newer state
// than the records that should justify it: a holder record older than the
// newest the node knows of (a damaged or restored holder.jsonl). The node
// fails closed: it neither runs the agent nor removes anything of it.
var ErrRecordBehind = errors.New("node: holder record older than the capsule")

// checkCapsule compares the capsule folder, if there is one, with the
// holder record and the source record st (nil: none). The capsule's
// manifest names the epochs it was committed under (its holder's and its
// journal heads'); a node that holds the agent holds it at no lower epoch,
// and a node that does not hold it keeps a capsule folder only while it
// finishes retiring it after a move from the epoch the capsule was
// committed under. Anything else means a record was lost, and replaying
// the records left would act on an older state than the newest the node
// has known (issue: a RETIRED record replayed over an agent that came
// back deleted it).
func (a *tenant) checkCapsule(st *transfer.SourceState) error {
	if !exists(a.n.fsys, a.capsule()) {
		return nil
	}
	h := a.holder.Holder()
	m, err := readManifestFile(a.n.fsys, a.capsule())
	switch {
	case err != nil && h > 0:
		return nil // the journal check refuses it as the node opens it
	case err != nil:
		return fmt.Errorf("%w: %s does not hold the agent and the capsule folder's manifest does not read (%v): it may be newer than the records", ErrRecordBehind, a.path(HolderFile), err)
	}
	seen := m.Holder.Epoch
	for _, head := range m.Journal.Heads {
		seen = max(seen, head.Epoch)
	}
	switch {
	case h > 0 && seen > h:
		return fmt.Errorf("%w: %s holds the agent at epoch %d, the capsule was committed under epoch %d", ErrRecordBehind, a.path(HolderFile), h, seen)
	case h == 0 && (st == nil || st.Phase != transfer.RecRetired || seen > st.Holder):
		return fmt.Errorf("%w: %s does not hold the agent (highest epoch %d), but the capsule folder is there, committed under epoch %d, and no move of this node retired it", ErrRecordBehind, a.path(HolderFile), a.holder.MaxEpoch(), seen)
	}
	return nil
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
