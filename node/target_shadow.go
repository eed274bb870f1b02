package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// The shadow is the next incoming move's staging, built while the agent
// still runs on the source: after each pre-copy push the target brings
// shadow/work to the workspace of the round's manifest (applying only what
// changed since the previous round, from its CAS store) and shadow/capsule
// to its layout files. The frozen window then renames the shadow into the
// move's staging and applies only the delta since the last round, instead
// of checking out the whole workspace. shadow.json says which manifest the
// shadow reflects and which layout files it holds; without it there is no
// shadow (it is removed before any change and written after the change is
// durable, so a crash leaves no half-built shadow that looks complete).
const (
	shadowDir  = "shadow"
	shadowFile = "shadow.json"
)

// shadowSkeleton lists the capsule's layout directories a shadow holds
// (artifacts/blobs is the CAS store, renamed in by the move).
var shadowSkeleton = []string{"artifacts", "environment", "memory", "memory/vector_index"}

// loadShadow returns the shadow's state and the snapshot its workspace
// holds, or nil and an empty snapshot when there is no usable shadow (a
// leftover is removed, and so is the shadow of a version this release does
// not read: a shadow is a cache of what the CAS store holds, and a move's
// staging is verified whole whether or not a shadow sped it up).
func (a *tenant) loadShadow() (*shadowState, *capsule.Snapshot) {
	if a.tgt.shadow != nil {
		return a.tgt.shadow.state, a.tgt.shadow.snap
	}
	fsys := a.n.fsys
	b, err := vfs.ReadFile(fsys, a.path(shadowFile))
	var st shadowState
	if err == nil && json.Unmarshal(b, &st) == nil && st.Files != nil && st.V <= schema.Current[schema.Shadow] {
		if snap, err := readSnapshotFile(fsys, filepath.Join(a.path(shadowDir, capsuleDir), filepath.FromSlash(manifest.SnapshotPath)), st.Files[manifest.SnapshotPath], nil); err == nil {
			a.tgt.shadow = &shadowMem{state: &st, snap: snap}
			return &st, snap
		}
	}
	a.dropShadow()
	return nil, capsule.NewSnapshot()
}

// dropShadow removes the shadow (it is cache).
func (a *tenant) dropShadow() {
	a.tgt.shadow = nil
	_ = a.n.fsys.Remove(a.path(shadowFile))
	_ = a.n.fsys.RemoveAll(a.path(shadowDir))
}

// casManifest reads, checks and parses the manifest blob md of the CAS
// store (or of blobDir when not empty).
func (a *tenant) casManifest(blobDir string, md digest.Digest) ([]byte, *manifest.Manifest, error) {
	if blobDir == "" {
		blobDir = a.cas().Dir
	}
	mb, err := vfs.ReadFile(a.n.fsys, filepath.Join(blobDir, md.Hex()))
	if err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", md.Short(), err)
	}
	if digest.FromBytes(mb) != md {
		return nil, nil, fmt.Errorf("manifest: content does not hash to %s", md.Short())
	}
	m, err := manifest.Parse(mb)
	if err != nil {
		return nil, nil, err
	}
	if m.Agent.ID != a.id {
		return nil, nil, fmt.Errorf("manifest names agent %s, the move is of %s", m.Agent.ID, a.id)
	}
	return mb, m, nil
}

// updateShadow brings the shadow to the state of manifest md, whose blobs
// a pre-copy push just put in the CAS store. Caller holds a.mu.
func (a *tenant) updateShadow(md digest.Digest) error {
	st, base := a.loadShadow()
	if st != nil && st.Manifest == md {
		return nil
	}
	mb, m, err := a.casManifest("", md)
	if err != nil {
		return err
	}
	sf, ok := m.File(manifest.SnapshotPath)
	if !ok {
		return errors.New("manifest lists no snapshot")
	}
	snap, err := readSnapshotFile(a.n.fsys, a.cas().Path(sf.Digest), sf.Digest, nil)
	if err != nil {
		return err
	}
	if st == nil {
		st = &shadowState{Files: map[string]digest.Digest{}}
	} else {
		// Durably gone before any file of the shadow changes (some are
		// written over in place): a crash then never leaves a shadow.json
		// that describes files other than those on disk.
		if err := a.n.fsys.Remove(a.path(shadowFile)); err != nil {
			return err
		}
		if err := a.n.fsys.SyncDir(a.dir); err != nil {
			return err
		}
	}
	a.tgt.shadow = nil
	var b store.Batch
	b.Dir(a.dir)
	if err := a.buildShadow(m, st, base, snap, &b); err != nil {
		a.dropShadow()
		return err
	}
	// The round's manifest.json too, only so that the staging writes the
	// frozen one over it in place instead of creating it (copyOver).
	mpath := filepath.Join(a.path(shadowDir, capsuleDir), manifest.FileName)
	if replaced, err := store.WriteOver(a.n.fsys, mpath, mb, 0o644); err != nil {
		a.dropShadow()
		return err
	} else if !replaced {
		b.Created(mpath)
	}
	b.File(mpath)
	if err := b.Flush(a.n.fsys); err != nil {
		a.dropShadow()
		return err
	}
	st.Manifest = md
	st.V, st.Release = schema.Current[schema.Shadow], schema.Release
	data, _ := json.Marshal(st)
	if err := vfs.WriteFile(a.n.fsys, a.path(shadowFile), data, 0o600); err != nil {
		a.dropShadow()
		return err
	}
	a.tgt.shadow = &shadowMem{state: st, snap: snap}
	if a.tgt.inc != nil {
		warmRender(a.tgt.inc.events, a.n.hooks.render)
	}
	return nil
}

func (a *tenant) buildShadow(m *manifest.Manifest, st *shadowState, base, snap *capsule.Snapshot, b *store.Batch) error {
	root := a.path(shadowDir)
	capDir := filepath.Join(root, capsuleDir)
	for _, d := range append([]string{root, capDir, filepath.Join(root, workDir)}, store.HostPaths(capDir, shadowSkeleton)...) {
		if err := store.MkdirNoted(a.n.fsys, d, b); err != nil {
			return err
		}
	}
	blobs := store.Folder{Dir: a.cas().Dir}
	if err := store.PlaceLayout(a.n.fsys, blobs, capDir, m, st.Files, b); err != nil {
		return err
	}
	return store.Checkout(a.n.fsys, blobs, filepath.Join(root, workDir), base, snap, b)
}

// keepShadow makes the workspace of a retired agent, frozen at fw, the
// shadow of a later move back (one rename), so that such a move applies
// only what changed since instead of checking out the whole workspace.
// What a checkout of fw.snap would not hold is removed first (ignored
// files, entries the snapshot skips), modes are those a checkout writes,
// and every file is synced before shadow.json says the shadow is
// complete: the runner wrote the workspace without syncing it. The
// shadow's layout files are only snapshot.json; the others come from the
// CAS store when a move needs them. Caller holds a.mu.
func (a *tenant) keepShadow(fw *frozenWork) error {
	fsys := a.n.fsys
	a.dropShadow()
	root := a.path(shadowDir)
	capDir := filepath.Join(root, capsuleDir)
	var b store.Batch
	b.Dir(a.dir)
	if err := fsys.Mkdir(root, 0o755); err != nil {
		return err
	}
	work := filepath.Join(root, workDir)
	if err := fsys.Rename(a.work(), work); err != nil {
		return err
	}
	b.Created(work)
	for _, d := range append([]string{capDir}, store.HostPaths(capDir, shadowSkeleton)...) {
		if err := store.MkdirNoted(fsys, d, &b); err != nil {
			return err
		}
	}
	sp := filepath.Join(capDir, filepath.FromSlash(manifest.SnapshotPath))
	if err := store.WriteNew(fsys, sp, fw.snapBytes, 0o644); err != nil {
		return err
	}
	b.File(sp)
	b.Created(sp)
	if err := store.PruneCheckout(fsys, work, fw.snap, &b); err != nil {
		return err
	}
	if err := a.casShadowBlobs(work, fw.snap); err != nil {
		return err
	}
	if err := b.Flush(fsys); err != nil {
		return err
	}
	st := &shadowState{V: schema.Current[schema.Shadow], Release: schema.Release, Manifest: fw.manifest, Files: map[string]digest.Digest{manifest.SnapshotPath: digest.FromBytes(fw.snapBytes)}}
	data, _ := json.Marshal(st)
	if err := vfs.WriteFile(fsys, a.path(shadowFile), data, 0o600); err != nil {
		return err
	}
	a.tgt.shadow = &shadowMem{state: st, snap: fw.snap}
	return nil
}

// casShadowBlobs puts into the CAS store, from the kept workspace, every
// blob the snapshot references that the store lacks: a file written after
// the last pre-copy commit was sent from the workspace, so the capsule's
// blob store that reclaim moved into the CAS store never held it, and a
// later move back takes every blob of the shadow as present (§9.3 of
// docs/PROTOCOL.md). Each is verified against its digest as it is
// written; a mismatch fails the shadow (it is dropped, never trusted).
func (a *tenant) casShadowBlobs(work string, snap *capsule.Snapshot) error {
	cas := a.cas()
	added := false
	for _, e := range snap.Entries {
		if e.Type != capsule.TypeFile || cas.Has(e.Blob) {
			continue
		}
		f, err := a.n.fsys.Open(filepath.Join(work, filepath.FromSlash(e.Path)))
		if err != nil {
			return fmt.Errorf("shadow blob %s: %w", e.Path, err)
		}
		_, _, err = cas.Put(e.Blob, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("shadow blob %s: %w", e.Path, err)
		}
		added = true
	}
	if added {
		return cas.Sync()
	}
	return nil
}
