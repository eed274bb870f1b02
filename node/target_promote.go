package node

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/journal/logfile"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// promote is ActStart (the HOLDER record is already durable): the staged
// capsule and workspace become the live ones, the journal records the move
// and the new epoch, and the runner starts. The manifest is committed with
// this node as holder right after the reply (commitHolderSoon): the holder
// record, not the manifest, is what lets a node run the agent, and the
// journal events are durable before the runner starts.
func (a *tenant) promote(act transfer.Action) error {
	fsys := a.n.fsys
	for _, name := range []string{capsuleDir, workDir} {
		src := a.staging(act.Move, name)
		if !exists(fsys, src) {
			continue // promoted before a crash; the live copy is in place
		}
		if err := fsys.RemoveAll(a.path(name)); err != nil {
			return err
		}
		if err := fsys.Rename(src, a.path(name)); err != nil {
			return err
		}
	}
	// The renames become durable while the move is journaled (the two
	// syncs overlap); the agent starts only once both are done, and the
	// staging's leftovers go only after the renames are durable.
	synced := make(chan error, 1)
	go func() { synced <- fsys.SyncDir(a.dir) }()
	renamed := func() error {
		if err := <-synced; err != nil {
			return err
		}
		_ = fsys.RemoveAll(a.staging(act.Move))
		return nil
	}
	a.dropIncoming()
	a.cache.Forget()
	a.attach = agentlog.Attachments{} // a new journal file: indexed afresh
	source := ""
	var staged *agentlog.Log
	var snap *capsule.Snapshot
	if a.tgt.in != nil && a.tgt.in.move == act.Move {
		source, staged, snap = a.tgt.in.source, a.tgt.in.log, a.tgt.in.snap
		a.tgt.in.log = nil
	}
	a.tgt.in.closeLog()
	a.tgt.in = nil
	if m, err := readManifestFile(fsys, a.capsule()); err == nil && a.meta.Name != m.Agent.Name {
		a.meta.Name = m.Agent.Name
	}
	if err := a.saveMetaIfChanged(); err != nil {
		return errors.Join(err, renamed())
	}
	if a.log != nil {
		_ = a.log.Close()
	}
	if staged != nil {
		staged.SetOnAppend(a.publishEvent) // watchers of the new holder see its events
	}
	a.log = staged // the journal file moved with its folder; the open file is the same
	return a.startAfterMove(act, source, snap, renamed)
}

// saveMetaIfChanged writes agent.json unless it already says a.meta.
func (a *tenant) saveMetaIfChanged() error {
	if b, err := vfs.ReadFile(a.n.fsys, a.path(record.MetaFile)); err == nil {
		if disk, err := record.DecodeMeta(b); err == nil && disk == a.meta {
			return nil
		}
	}
	return a.saveMeta()
}

func (a *tenant) startAfterMove(act transfer.Action, source string, snap *capsule.Snapshot, renamed func() error) error {
	if source == "" {
		source = a.lastMoveSource()
	}
	if _, ok := a.mayRun(); !ok {
		return errors.Join(fmt.Errorf("%w: %s (%s)", ErrNotHeld, a.id, a.why()), renamed())
	}
	if err := a.openLog(act.Epoch); err != nil {
		return errors.Join(err, renamed())
	}
	// The move and the new epoch are journaled together: one fsync.
	kinds := []journal.Kind{journal.KindMoved, journal.KindEpoch}
	bodies := []any{journal.Moved{From: source, To: string(a.n.id), Epoch: act.Epoch}, journal.EpochStart{Epoch: act.Epoch, Holder: string(a.n.id)}}
	kinds, bodies = a.takeMappings(kinds, bodies) // the prepare's tool mappings come first (compat.go)
	_, err := a.log.AppendAll(act.Epoch, a.n.wallTime(), kinds, bodies)
	if err = errors.Join(err, renamed()); err != nil {
		return err
	}
	started := a.n.clock.Now() // before the runner touches the workspace
	if !a.meta.Run {
		a.n.log.Info("agent stays stopped: the operator stopped it", "agent", a.id, "epoch", act.Epoch)
	} else if err := a.runLocked(); err != nil {
		return err
	}
	a.afterMove(act.Epoch, snap, started)
	return nil
}

// afterMove, once the request that activated the move has been answered,
// commits the manifest naming this node as holder at epoch and teaches
// the stat cache the workspace it materialized (snap, when known), so the
// next record hashes only what the agent changes. started is when the
// runner started: a file it has changed since has a newer time, which the
// cache never trusts for an entry recorded at started.
func (a *tenant) afterMove(epoch uint64, snap *capsule.Snapshot, started time.Time) {
	a.n.wg.Add(1)
	go func() {
		defer a.n.wg.Done()
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.log == nil || a.holder.Holder() != epoch || ctxDone(a.n.ctx) {
			return
		}
		if err := a.commitHolderLocked(); err != nil {
			a.n.log.Warn("commit after move", "agent", a.id, "err", err)
		} else if err := a.pruneBlobsLocked(); err != nil {
			a.n.log.Warn("prune after move", "agent", a.id, "err", err)
		}
		if snap != nil {
			if racy := a.seedCache(snap, started); len(racy) > 0 {
				a.n.wg.Add(1)
				go a.rehashLater(a.work(), racy, started)
			}
		}
	}()
}

// pruneBlobsLocked removes from the capsule's blob folder the blobs that
// neither its snapshot nor an attachment of its journal references. A
// move's staging takes the whole CAS store, which holds blobs of earlier
// pre-copies and holds, so without this the blob folder would grow with
// every move (and verify warn about each such blob). A move out of this
// node lists only referenced blobs, and takes a.mu to do so, so none is
// pruned under it. Caller holds a.mu.
func (a *tenant) pruneBlobsLocked() error {
	atts, err := a.journalAttachments()
	if err != nil {
		return err
	}
	keep := make(map[digest.Digest]bool, len(atts))
	for _, b := range atts {
		keep[b.Digest] = true
	}
	c, err := capsule.Open(a.n.fsys, a.capsule(), capsule.Config{Writer: a.n.writer()})
	if err != nil {
		return err
	}
	n, bytes, err := c.PruneBlobs(func(d digest.Digest) bool { return keep[d] })
	if n > 0 {
		a.n.log.Debug("unreferenced blobs pruned", "agent", a.id, "blobs", n, "bytes", bytes)
	}
	return err
}

// seedCache records in the stat cache the digests of the workspace files
// a checkout of snap wrote, as known at time at (store.StatCache.Seed). It
// returns the files the cache will not trust for that.
func (a *tenant) seedCache(snap *capsule.Snapshot, at time.Time) []store.WalkedFile {
	return a.cache.Seed(a.n.fsys, a.work(), snap, at)
}

// rehashLater hashes again, once store.RacyWindow has passed since at, the
// seeded files the stat cache could not trust, so that the next freeze
// finds them cached instead of hashing them inside the frozen window. It
// runs beside the agent, as a pre-copy record does: a file the agent
// changes meanwhile gets a newer stat, which its entry does not match.
func (a *tenant) rehashLater(dir string, files []store.WalkedFile, at time.Time) {
	defer a.n.wg.Done()
	if wait := at.Add(store.RacyWindow + 10*time.Millisecond).Sub(a.n.clock.Now()); wait > 0 {
		select {
		case <-a.n.clock.After(wait):
		case <-a.n.ctx.Done():
			return
		}
	}
	store.Rehash(a.n.fsys, dir, files, &a.cache, a.n.clock.Now, func() bool { return ctxDone(a.n.ctx) })
}

// lastMoveSource returns the source node of an incoming move: the machine
// of the journal's last event (read only when the move's bookkeeping was
// lost to a restart).
func (a *tenant) lastMoveSource() string {
	var last string
	_, err := logfile.Each(a.n.fsys, filepath.Join(a.capsule(), journalInCap), func(e *journal.Event, _ journal.Pos) error {
		last = e.Machine
		return nil
	})
	if err != nil {
		return ""
	}
	return last
}
