package node

import (
	"errors"
	"fmt"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/par"
	"github.com/agentcapsule/capsule/node/store"
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
