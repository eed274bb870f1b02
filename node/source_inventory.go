package node

import (
	"fmt"
	"path/filepath"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// inventoryLocked lists the committed capsule and remembers where each
// blob's bytes are, for pushing.
func (a *tenant) inventoryLocked(mr *moveRun) (transfer.Inventory, error) {
	capDir := a.capsule()
	mb, err := vfs.ReadFile(a.n.fsys, filepath.Join(capDir, manifest.FileName))
	if err != nil {
		return transfer.Inventory{}, fmt.Errorf("inventory: %w", err)
	}
	m, err := manifest.Parse(mb)
	if err != nil {
		return transfer.Inventory{}, fmt.Errorf("inventory: %w", err)
	}
	md := digest.FromBytes(mb)
	sum := a.log.Summary()
	inv := transfer.Inventory{Manifest: md, Journal: agentlog.PosOfSummary(sum)}
	src := blobSources{paths: map[digest.Digest]string{}}
	src.add(&inv, md, int64(len(mb)), filepath.Join(capDir, manifest.FileName))
	for _, f := range m.Files {
		src.add(&inv, f.Digest, f.Size, filepath.Join(capDir, filepath.FromSlash(f.Path)))
	}
	blobs, err := snapshotBlobs(a.n.fsys, filepath.Join(capDir, filepath.FromSlash(manifest.SnapshotPath)))
	if err != nil {
		return transfer.Inventory{}, err
	}
	atts, err := a.journalAttachments()
	if err != nil {
		return transfer.Inventory{}, err
	}
	for _, b := range append(blobs, atts...) {
		src.add(&inv, b.Digest, b.Size, filepath.Join(capDir, filepath.FromSlash(manifest.BlobsDir), b.Digest.Hex()))
	}
	mr.setSources(src, inv.Manifest, sum.Bytes, inv.Journal)
	return inv, nil
}

// snapshotBlobs returns the blobs a snapshot.json references, sorted.
func snapshotBlobs(fsys vfs.FS, path string) ([]transfer.Blob, error) {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	s, err := capsule.ParseSnapshot(b)
	if err != nil {
		return nil, err
	}
	return sortedBlobs(s), nil
}

// frozenInventory is the inventory of the frozen agent, built without
// committing the capsule on this node: the workspace is recorded (only
// files changed since the last commit are hashed) and the manifest that
// describes the frozen state is built in memory. Its bytes and the new
// snapshot.json travel from memory, blobs the capsule's store lacks from
// the workspace files (frozen: the runner is stopped). Nothing here needs
// to be durable: a source that crashes now rolls back and resumes from its
// workspace and journal, which are.
func (a *tenant) frozenInventory(mr *moveRun) (transfer.Inventory, error) {
	capDir := a.capsule()
	m, err := readManifestFile(a.n.fsys, capDir)
	if err != nil {
		return transfer.Inventory{}, fmt.Errorf("inventory: %w", err)
	}
	start, hits := a.n.clock.Now(), a.cache.HitCount()
	rec, err := a.record()
	if err != nil {
		return transfer.Inventory{}, err
	}
	a.n.log.Debug("workspace recorded", "agent", a.id, "entries", len(rec.Snap.Entries), "cached", a.cache.HitCount()-hits, "ms", a.n.clock.Now().Sub(start).Milliseconds())
	sb, err := rec.Snap.Marshal()
	if err != nil {
		return transfer.Inventory{}, err
	}
	m.SetFile(manifest.File{Path: manifest.SnapshotPath, Size: int64(len(sb)), Digest: digest.FromBytes(sb)})
	m.Holder = manifest.Holder{Node: string(a.n.id), Epoch: a.holder.Holder()}
	sum := a.log.Summary() // the runner is stopped: the journal is still
	m.Journal = manifestJournal(sum)
	// The freeze just appended a line at this release's version, unless
	// the target reads an older one and gets the down-converted view
	// (versions.go, FORMAT §11.6).
	m.Schemas[schema.Journal] = mr.pin.journalVersion()
	m.Writer = a.n.writer()
	if m.Writer.Commit == "" {
		m.Writer.Commit = "unknown"
	}
	mb, err := m.Marshal()
	if err != nil {
		return transfer.Inventory{}, err
	}
	src := blobSources{mem: map[digest.Digest][]byte{digest.FromBytes(mb): mb, digest.FromBytes(sb): sb}, paths: map[digest.Digest]string{}}
	inv := transfer.Inventory{Manifest: digest.FromBytes(mb), Journal: agentlog.PosOfSummary(sum)}
	src.add(&inv, digest.FromBytes(mb), int64(len(mb)), "")
	for _, f := range m.Files {
		src.add(&inv, f.Digest, f.Size, filepath.Join(capDir, filepath.FromSlash(f.Path)))
	}
	store := capsule.NewBlobStore(a.n.fsys, filepath.Join(capDir, filepath.FromSlash(manifest.BlobsDir)))
	for _, b := range sortedBlobs(rec.Snap) {
		p := rec.Files[b.Digest]
		if a.cache.IsStored(b.Digest) {
			p = store.Path(b.Digest)
		}
		src.add(&inv, b.Digest, b.Size, p)
	}
	atts, err := a.journalAttachments() // only the events since the last pre-copy round are read
	if err != nil {
		return transfer.Inventory{}, err
	}
	for _, b := range atts {
		src.add(&inv, b.Digest, b.Size, store.Path(b.Digest))
	}
	mr.setSources(src, inv.Manifest, sum.Bytes, inv.Journal)
	mr.mu.Lock()
	mr.frozenWork = &frozenWork{manifest: inv.Manifest, snapBytes: sb, snap: rec.Snap}
	mr.mu.Unlock()
	return inv, nil
}

// journalAttachments returns the attachment blobs of the agent's journal,
// reading only what was appended since the last call. Caller holds a.mu,
// and the journal is open (a.log).
func (a *tenant) journalAttachments() ([]transfer.Blob, error) {
	if err := a.attach.Scan(a.n.fsys, filepath.Join(a.capsule(), journalInCap), a.log.Summary().Bytes); err != nil {
		return nil, err
	}
	return a.attach.List(), nil
}
