package node

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/journal/logfile"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/vfs"
)

// discard is ActDiscard: the move's staging goes away; its blobs go back
// into the CAS store and its journal back to the journal copy, so a later
// attempt does not send them again. The shadow it was built from is gone.
func (a *tenant) discard(move string) error {
	if a.tgt.in != nil && a.tgt.in.move == move {
		a.tgt.in.closeLog()
		a.tgt.in = nil
	}
	dir := a.staging(move)
	if !exists(a.n.fsys, dir) {
		return nil
	}
	if err := a.reclaim(a.staging(move, capsuleDir), -1); err != nil {
		return err
	}
	if err := a.n.fsys.RemoveAll(dir); err != nil {
		return err
	}
	return a.n.fsys.SyncDir(a.path(stagingDir))
}

// toCache turns the retired capsule folder into cache: blobs into the CAS
// store, the journal into the journal copy, and the workspace, when fw
// says what it holds, into the shadow of a later move back (keepShadow);
// the rest is removed.
func (a *tenant) toCache(events int64, fw *frozenWork) error {
	a.cache.Forget()
	a.attach = agentlog.Attachments{}
	_ = a.n.fsys.Remove(a.path(statCacheFile)) // it described the workspace that leaves
	if err := a.reclaim(a.capsule(), events); err != nil {
		return err
	}
	if fw != nil && exists(a.n.fsys, a.work()) {
		if err := a.keepShadow(fw); err != nil {
			a.n.log.Warn("retire: workspace not kept as shadow", "agent", a.id, "err", err)
			a.dropShadow()
		}
	}
	for _, name := range []string{capsuleDir, workDir} {
		if err := a.n.fsys.RemoveAll(a.path(name)); err != nil {
			return err
		}
	}
	return a.n.fsys.SyncDir(a.dir)
}

// reclaim moves the blobs of a capsule folder into the CAS store (the
// whole folder by one rename when the store is empty) and its journal to
// the journal copy (when it has at least as many events; events is the
// capsule journal's count, or -1 to count them).
func (a *tenant) reclaim(capDir string, events int64) error {
	fsys, c := a.n.fsys, a.cas()
	bdir := filepath.Join(capDir, filepath.FromSlash(manifest.BlobsDir))
	if exists(fsys, bdir) && !exists(fsys, c.Dir) {
		if err := vfs.MkdirAllDurable(fsys, a.dir, 0o700); err != nil {
			return err
		}
		if err := fsys.Rename(bdir, c.Dir); err != nil {
			return err
		}
		if err := fsys.SyncDir(a.dir); err != nil {
			return err
		}
	} else if err := a.reclaimBlobs(bdir); err != nil {
		return err
	}
	jpath := filepath.Join(capDir, filepath.FromSlash(manifest.JournalPath))
	if events < 0 && exists(fsys, jpath) {
		events = int64(journalCount(fsys, jpath))
	}
	if exists(fsys, jpath) && a.incomingCount() <= uint64(events) {
		a.dropIncoming()
		if err := fsys.Rename(jpath, a.path(incomingFile)); err != nil {
			return err
		}
		return fsys.SyncDir(a.dir)
	}
	return nil
}

// reclaimBlobs moves the blobs of bdir the CAS store lacks into it.
func (a *tenant) reclaimBlobs(bdir string) error {
	fsys, c := a.n.fsys, a.cas()
	ents, err := fsys.ReadDir(bdir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(ents) > 0 {
		if err := vfs.MkdirAllDurable(fsys, c.Dir, 0o700); err != nil {
			return err
		}
	}
	for _, e := range ents {
		d, err := digest.FromHex(e.Name())
		if err != nil || exists(fsys, c.Path(d)) {
			continue
		}
		if err := fsys.Rename(filepath.Join(bdir, e.Name()), c.Path(d)); err != nil {
			return err
		}
	}
	return c.Sync()
}

func journalCount(fsys vfs.FS, path string) uint64 {
	var n uint64
	if _, err := logfile.Each(fsys, path, func(*journal.Event, journal.Pos) error { n++; return nil }); err != nil {
		return 0
	}
	return n
}
