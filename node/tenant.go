package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// ErrNotHeld is returned for an operation that needs this node to hold the agent.
var ErrNotHeld = errors.New("node: agent not held here")

// newTenant returns the record of agent id, empty: no holder record yet.
func (n *Node) newTenant(id string) *tenant {
	return &tenant{n: n, id: id, dir: filepath.Join(n.cfg.Dir, "agents", id), src: &sourceSide{}, tgt: &targetSide{}}
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
		name := record.SourceFile
		if rec.Target != nil {
			name = record.HolderFile
		}
		if err := record.Save(a.n.fsys, a.path(name), record.Sign(a.n.key, rec)); err != nil {
			return err
		}
	}
	return nil
}

// saveMeta writes agent.json at this release's version; it refuses while
// the file on disk is one this release cannot read, so a newer release's
// record is kept byte for byte.
func (a *tenant) saveMeta() error {
	if a.metaRefused != nil {
		return a.metaRefused
	}
	a.baseURL.Store(a.meta.BaseURL)
	b, err := record.EncodeMeta(a.meta)
	if err != nil {
		return err
	}
	return vfs.WriteFile(a.n.fsys, a.path(record.MetaFile), b, 0o600)
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
	if b, err := vfs.ReadFile(n.fsys, a.path(record.MetaFile)); err == nil {
		a.meta, a.metaRefused = record.DecodeMeta(b)
		a.baseURL.Store(a.meta.BaseURL)
	}
	defer func() {
		if a.metaRefused != nil && a.blocked == nil {
			a.blocked = a.metaRefused // fail closed: its intent is unknown
		}
	}()
	t, err := record.LoadTarget(n.fsys, a.path(record.HolderFile), n.id, id)
	if errors.Is(err, record.ErrNoHolder) && !exists(n.fsys, a.capsule()) {
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

func (a *tenant) staging(move string, elem ...string) string {
	return a.path(append([]string{stagingDir, move}, elem...)...)
}
