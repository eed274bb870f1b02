package capsule

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path/filepath"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/internal/dirlist"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// PendingDir is the directory a commit stages its files and its new
// manifest in (FORMAT §4.2). It exists only while a commit runs or after a
// crash interrupted one; Open completes or removes it.
const PendingDir = ".commit"

// filePerm is the mode of the capsule's files other than blobs.
const filePerm fs.FileMode = 0o644

// Tx is one commit in preparation. Its methods stage changes; nothing is
// visible to readers until Commit's function returns nil and the commit
// completes. A Tx must not be used after its function returns.
type Tx struct {
	c      *Capsule
	m      *manifest.Manifest
	staged map[string]bool // slash paths whose new content is in PendingDir
}

// Manifest returns the manifest being built; changes to it are committed.
// Prefer the setters, which keep it consistent.
func (tx *Tx) Manifest() *manifest.Manifest { return tx.m }

// PutBlob stores a blob durably right away: blobs come first in the commit
// order, and an unreferenced blob is harmless (FORMAT §4.2). Inside a
// commit's function use this, not Capsule.PutBlob, which would wait for
// the commit's own lock.
func (tx *Tx) PutBlob(r io.Reader) (digest.Digest, int64, error) { return tx.c.blobs.put(r, "") }

// SetHolder records the node that holds the agent and its epoch.
func (tx *Tx) SetHolder(h manifest.Holder) { tx.m.Holder = h }

// SetJournal records the committed journal. The journal's bytes must
// already be durable in memory/timeline_events.jsonl (the journal comes
// before the manifest in the commit order); this checks that the file holds
// at least j.Bytes bytes. It records the journal's schema version as the
// highest v of the committed lines (FORMAT §11.6).
func (tx *Tx) SetJournal(j manifest.Journal) error {
	fi, err := tx.c.fsys.Stat(tx.c.path(manifest.JournalPath))
	if err != nil {
		return fmt.Errorf("set journal: %w", err)
	}
	if fi.Size() < j.Bytes {
		return fmt.Errorf("set journal: the journal holds %d bytes, fewer than the %d to commit", fi.Size(), j.Bytes)
	}
	if err := tx.setJournalVersion(j.Bytes, j.Events); err != nil {
		return err
	}
	tx.m.Journal = j
	return nil
}

// SetFile stages new content for one file of the layout (working memory,
// vector index, snapshot or environment), streaming it to PendingDir.
func (tx *Tx) SetFile(rel string, r io.Reader) error {
	if _, ok := tx.m.File(rel); !ok && !isLayoutFile(rel) {
		return fmt.Errorf("set file: %s is not a file of the layout (FORMAT §1)", rel)
	}
	dir := tx.c.path(PendingDir)
	if err := vfs.MkdirAllDurable(tx.c.fsys, dir, 0o755); err != nil {
		return fmt.Errorf("set file %s: %w", rel, err)
	}
	h := digest.NewHasher()
	n, err := vfs.WriteFileFromN(tx.c.fsys, filepath.Join(dir, pendingName(rel)), io.TeeReader(r, h), filePerm)
	if err != nil {
		return fmt.Errorf("set file %s: %w", rel, err)
	}
	tx.m.SetFile(manifest.File{Path: rel, Size: n, Digest: h.Digest()})
	tx.staged[rel] = true
	return nil
}

// SetWorkingMemory replaces memory/working_memory.md.
func (tx *Tx) SetWorkingMemory(b []byte) error {
	return tx.SetFile(manifest.WorkingMemoryPath, bytes.NewReader(b))
}

// SetEnvironment replaces environment/spec.json; a spec that breaks the
// secret rules is refused.
func (tx *Tx) SetEnvironment(s *envspec.Spec) error {
	b, err := s.Marshal()
	if err != nil {
		return err
	}
	tx.m.Schemas[schema.Environment] = envspec.Version // a migrated view is written at its version
	return tx.SetFile(manifest.EnvironmentPath, bytes.NewReader(b))
}

// SetSnapshot replaces artifacts/snapshot.json. Every blob it references
// must already be in the store with the recorded size.
func (tx *Tx) SetSnapshot(s *Snapshot) error {
	b, err := s.Marshal()
	if err != nil {
		return err
	}
	for d, size := range s.Blobs() {
		n, err := tx.c.blobs.Size(d)
		if err != nil {
			return fmt.Errorf("set snapshot: %w", err)
		}
		if n != size {
			return fmt.Errorf("set snapshot: %w: blob %s has %d bytes, the snapshot says %d", ErrCorrupt, d.Short(), n, size)
		}
	}
	return tx.SetFile(manifest.SnapshotPath, bytes.NewReader(b))
}

func isLayoutFile(rel string) bool {
	for _, f := range manifest.LayoutFiles {
		if f == rel {
			return true
		}
	}
	return false
}

// pendingName is the flat name of a staged file in PendingDir.
func pendingName(rel string) string { return url.PathEscape(rel) }

// Commit runs fn on a new Tx and, if fn returns nil, commits what it staged
// (FORMAT §4.2): blobs are already durable; the staged files and the new
// manifest are written to PendingDir; writing PendingDir/manifest.json is
// the commit point; the staged files are then renamed into place, the
// manifest last. A stale manifest.json.sig is removed first: a live capsule
// never keeps a signature. If fn fails, nothing changes but the blobs it
// stored. Commit returns ErrConflict if another writer changed the manifest
// since this Capsule read it. fn must not call Commit, SnapshotFrom,
// PruneBlobs or Capsule.PutBlob (they wait for this commit); the read
// methods are fine. After an error other than fn's, reopen the capsule.
// While another process hosts the capsule (LockHost) Commit refuses with a
// *HeldError naming it, before fn runs.
func (c *Capsule) Commit(fn func(tx *Tx) error) error {
	c.lock.commit.Lock()
	defer c.lock.commit.Unlock()
	c.lock.rw.RLock()
	defer c.lock.rw.RUnlock()
	if err := checkHost(c.fsys, c.dir, "commit"); err != nil {
		return err
	}
	if err := c.checkUnchanged(); err != nil {
		return err
	}
	tx := &Tx{c: c, m: c.Manifest(), staged: map[string]bool{}}
	if err := fn(tx); err != nil {
		_ = c.fsys.RemoveAll(c.path(PendingDir))
		return err
	}
	tx.m.Writer = c.cfg.writer()
	data, err := tx.m.Marshal()
	if err != nil {
		_ = c.fsys.RemoveAll(c.path(PendingDir))
		return fmt.Errorf("commit: %w", err)
	}
	if err := c.commit(data); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	c.mu.Lock()
	c.m, c.mdigest = tx.m, digest.FromBytes(data)
	c.mu.Unlock()
	return nil
}

// checkUnchanged compares the manifest on disk with the one this Capsule
// holds, and refuses to start while another commit is pending.
func (c *Capsule) checkUnchanged() error {
	if _, err := c.fsys.Lstat(c.path(PendingDir)); err == nil {
		return fmt.Errorf("%w: a commit is in progress (%s exists)", ErrConflict, PendingDir)
	}
	b, err := readLimited(c.fsys, c.path(manifest.FileName), manifest.MaxSize)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	c.mu.Lock()
	want := c.mdigest
	c.mu.Unlock()
	if digest.FromBytes(b) != want {
		return fmt.Errorf("%w: reopen the capsule and retry", ErrConflict)
	}
	return nil
}

// commit performs the durable steps of a commit whose files are staged.
func (c *Capsule) commit(manifestData []byte) error {
	if err := c.removeSignature(); err != nil {
		return err
	}
	pending := c.path(PendingDir)
	if err := vfs.MkdirAllDurable(c.fsys, pending, 0o755); err != nil {
		return err
	}
	if err := vfs.WriteFile(c.fsys, filepath.Join(pending, manifest.FileName), manifestData, filePerm); err != nil {
		return err
	}
	return applyPending(c.fsys, c.dir)
}

// removeSignature removes manifest.json.sig durably, if present.
func (c *Capsule) removeSignature() error {
	err := c.fsys.Remove(c.path(manifest.SignatureName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove stale signature: %w", err)
	}
	return c.fsys.SyncDir(c.dir)
}

// applyPending completes a commit whose PendingDir/manifest.json is
// durable: it moves each staged file into place, then the manifest, then
// removes PendingDir. Every step can be repeated, so recovery calls it too.
func applyPending(fsys vfs.FS, dir string) error {
	pending := hostPath(dir, PendingDir)
	for _, rel := range manifest.LayoutFiles {
		src := filepath.Join(pending, pendingName(rel))
		if _, err := fsys.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			continue // not staged, or already moved
		}
		dst := hostPath(dir, rel)
		if err := vfs.MkdirAllDurable(fsys, filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := fsys.Rename(src, dst); err != nil {
			return err
		}
		if err := fsys.SyncDir(filepath.Dir(dst)); err != nil {
			return err
		}
	}
	if err := fsys.Rename(filepath.Join(pending, manifest.FileName), hostPath(dir, manifest.FileName)); err != nil {
		return err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return err
	}
	return removeDurably(fsys, pending)
}

// removeDurably removes a directory tree and syncs its parent.
func removeDurably(fsys vfs.FS, name string) error {
	if err := fsys.RemoveAll(name); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(name))
}

// recoverDir brings a capsule folder back to a committed state after a
// crash (FORMAT §4.3). It writes nothing when there is nothing to do, nor
// while another process hosts the folder: what looks unfinished may be
// the host's commit in progress, and recovery is the host's.
func recoverDir(fsys vfs.FS, dir string) error {
	if err := CheckHost(fsys, dir); errors.Is(err, ErrHeld) {
		return nil
	} else if err != nil {
		return err
	}
	pending := hostPath(dir, PendingDir)
	if _, err := fsys.Lstat(pending); err == nil {
		_, err := fsys.Lstat(filepath.Join(pending, manifest.FileName))
		switch {
		case err == nil: // past the commit point: roll forward
			if err := applyPending(fsys, dir); err != nil {
				return fmt.Errorf("complete interrupted commit: %w", err)
			}
		case errors.Is(err, fs.ErrNotExist): // before it: roll back
			if err := removeDurably(fsys, pending); err != nil {
				return fmt.Errorf("roll back interrupted commit: %w", err)
			}
		default:
			return err
		}
	}
	return removeTemps(fsys, dir)
}

// removeTemps deletes the temporary files atomic writes leave after a
// crash, in the capsule's root and layout directories.
func removeTemps(fsys vfs.FS, dir string) error {
	for _, d := range append([]string{"."}, layoutDirs...) {
		host := hostPath(dir, d)
		removed := false
		var rmErr error
		err := dirlist.Each(fsys, host, func(e fs.DirEntry) error { // a batch at a time: blobs may be millions
			if !isTemp(e.Name()) || e.IsDir() {
				return nil
			}
			if rmErr = fsys.Remove(filepath.Join(host, e.Name())); rmErr != nil {
				return rmErr
			}
			removed = true
			return nil
		})
		if rmErr != nil {
			return fmt.Errorf("remove leftover: %w", rmErr)
		}
		if err != nil && !removed {
			continue // a missing directory is Verify's business
		}
		if removed {
			if err := fsys.SyncDir(host); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetHolder commits a new holder record durably.
func (c *Capsule) SetHolder(h manifest.Holder) error {
	return c.Commit(func(tx *Tx) error { tx.SetHolder(h); return nil })
}
