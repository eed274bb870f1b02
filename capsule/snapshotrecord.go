package capsule

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/par"
	"github.com/agentcapsule/capsule/vfs"
)

// record hashes every file on cfg.Workers goroutines and stores, through
// one blobBatch, each blob the store lacks. A file of up to bufSize bytes
// is read once: hashed in memory and, when new, written from there. A
// larger one is hashed as it streams, then, when new, read again and
// checked to hash the same while it is copied (a file that changed
// meanwhile fails the snapshot).
func (w *walker) record(store *BlobStore, cfg SnapshotConfig, res *SnapshotResult) error {
	if st, ok := cfg.Progress.(interface{ SetTotal(int64) }); ok {
		var total int64
		for _, f := range w.files {
			total += f.Size // the sizes the walk saw
		}
		st.SetTotal(total)
	}
	p := newLockedProgress(cfg.Progress)
	batch := newBlobBatch(store)
	var mu sync.Mutex
	errs := make([]error, len(w.files))
	par.Do(len(w.files), workers(cfg.Workers), func(i int) {
		f := &w.files[i]
		stored, err := w.recordFile(batch, f, p)
		errs[i] = err
		if stored {
			mu.Lock()
			res.NewBlobs++
			res.NewBytes += f.Size
			mu.Unlock()
		}
	})
	err := errors.Join(errs...)
	if cerr := batch.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// recordFile sets f's blob and size and adds its blob to batch unless the
// store or the batch has it; it reports whether it added it.
func (w *walker) recordFile(batch *blobBatch, f *Entry, p Progress) (bool, error) {
	name := hostPath(w.root, f.Path)
	if f.Size <= bufSize {
		buf := getBuf()
		defer putBuf(buf)
		n, whole, err := readSmall(w.fsys, name, *buf)
		if err != nil {
			return false, err
		}
		if whole {
			if p != nil && n > 0 {
				p.Add(int64(n))
			}
			f.Blob, f.Size = digest.FromBytes((*buf)[:n]), int64(n)
			return batch.AddBytes(f.Blob, (*buf)[:n])
		}
	}
	var err error
	if f.Blob, f.Size, err = hashFile(w.fsys, name, -1, p); err != nil {
		return false, err
	}
	return w.storeCopy(batch, *f)
}

// readSmall reads name into buf and reports whether that was the whole
// file; a file larger than buf (it grew since the walk) is not.
func readSmall(fsys vfs.FS, name string, buf []byte) (int, bool, error) {
	src, err := fsys.Open(name)
	if err != nil {
		return 0, false, err
	}
	defer src.Close()
	n, err := io.ReadFull(src, buf)
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		return n, true, nil
	case nil:
		return n, false, nil
	}
	return n, false, err
}

// storeCopy adds f's blob to batch, reading the file again, unless the
// store or the batch has it.
func (w *walker) storeCopy(batch *blobBatch, f Entry) (bool, error) {
	if has, err := batch.s.Has(f.Blob); err != nil || has {
		return false, err
	}
	src, err := w.fsys.Open(hostPath(w.root, f.Path))
	if err != nil {
		return false, err
	}
	defer src.Close()
	stored, err := batch.Add(f.Blob, src)
	var de *DigestError
	if errors.As(err, &de) {
		return false, fmt.Errorf("%s changed while it was being recorded; record again", f.Path)
	}
	return stored, err
}
