package node

import (
	"errors"
	"fmt"
	"github.com/agentcapsule/capsule/node/store"
	"path/filepath"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/par"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/transfer"
)

// record records the agent's workspace with the stat cache (falling back to
// capsule.BuildSnapshot for what the fast path does not handle) and returns
// the snapshot with, for each blob, a file that holds its bytes.
func (a *tenant) record() (*store.WorkRecord, error) {
	rec, err := store.RecordWork(a.n.fsys, a.work(), &a.cache, a.n.clock.Now)
	if !errors.Is(err, store.ErrSlowPath) {
		return rec, err
	}
	c, err := capsule.Open(a.n.fsys, a.capsule(), capsule.Config{})
	if err != nil {
		return nil, err
	}
	snap, _, err := capsule.BuildSnapshot(a.work(), c.Blobs(), capsule.SnapshotConfig{FS: a.n.fsys}, "")
	if err != nil {
		return nil, fmt.Errorf("record workspace: %w", err)
	}
	rec = &store.WorkRecord{Snap: snap, Files: map[digest.Digest]string{}}
	for d := range snap.Blobs() {
		rec.Files[d] = c.Blobs().Path(d) // BuildSnapshot stored every blob
	}
	return rec, nil
}

// storeRecord copies into the capsule's blob store every blob of rec it
// lacks (durably: each blob is fsynced and renamed into place).
func (a *tenant) storeRecord(store *capsule.BlobStore, rec *store.WorkRecord) error {
	var todo []digest.Digest
	for d := range rec.Snap.Blobs() {
		if !a.cache.IsStored(d) {
			if ok, err := store.Has(d); err != nil {
				return err
			} else if !ok {
				todo = append(todo, d)
				continue
			}
			a.cache.MarkStored(d)
		}
	}
	errs := make([]error, len(todo))
	par.Do(len(todo), 2, func(i int) {
		errs[i] = a.storeBlob(store, todo[i], rec.Files[todo[i]])
	})
	return errors.Join(errs...)
}

func (a *tenant) storeBlob(store *capsule.BlobStore, d digest.Digest, path string) error {
	f, err := a.n.fsys.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := store.PutExpect(d, f); err != nil {
		var de *capsule.DigestError
		if errors.As(err, &de) {
			return fmt.Errorf("%s changed while it was being recorded; record again", path)
		}
		return err
	}
	a.cache.MarkStored(d)
	return nil
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
	m.Writer = a.n.writer()
	if m.Writer.Commit == "" {
		m.Writer.Commit = "unknown"
	}
	mb, err := m.Marshal()
	if err != nil {
		return transfer.Inventory{}, err
	}
	src := blobSources{mem: map[digest.Digest][]byte{digest.FromBytes(mb): mb, digest.FromBytes(sb): sb}, paths: map[digest.Digest]string{}}
	inv := transfer.Inventory{Manifest: digest.FromBytes(mb), Journal: posOfSummary(sum)}
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

// frozenWork is the workspace of a frozen agent as its freeze recorded
// it: the runner is stopped, so the workspace holds exactly snap until the
// move ends.
type frozenWork struct {
	manifest  digest.Digest // the frozen inventory's manifest
	snapBytes []byte        // snapshot.json of that manifest
	snap      *capsule.Snapshot
}

// blobSources says where the bytes of each inventory blob come from.
type blobSources struct {
	mem   map[digest.Digest][]byte
	paths map[digest.Digest]string
}

// add lists a blob in inv once, reading it from path unless it is in mem.
func (s blobSources) add(inv *transfer.Inventory, d digest.Digest, size int64, path string) {
	if _, ok := s.paths[d]; ok {
		return
	}
	inv.Blobs = append(inv.Blobs, transfer.Blob{Digest: d, Size: size})
	s.paths[d] = path
}

func sortedBlobs(s *capsule.Snapshot) []transfer.Blob {
	var out []transfer.Blob
	for d, size := range s.Blobs() {
		out = append(out, transfer.Blob{Digest: d, Size: size})
	}
	sortBlobs(out)
	return out
}
