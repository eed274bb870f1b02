package capsule

import (
	"fmt"
	"io"
	"sync"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// Batch limits: a batch is flushed when it holds batchBlobs blobs or
// batchBytes bytes. Each flush costs one vfs.SyncFiles (on Linux one
// syncfs) and one fsync of the blob folder, so larger batches cost less;
// the limits bound what a batch remembers (a name per blob) and how much
// unsynced data it leaves to the kernel. Tests lower them.
var (
	batchBlobs       = 16384
	batchBytes int64 = 1 << 30
)

// blobBatch stores many blobs with a few durable steps instead of two per
// blob (FORMAT §5.2). Add writes each blob to a temporary file in the
// store without syncing it; a flush then makes the batch's files durable
// together (vfs.SyncFiles), renames each to its blob name unless that
// name exists, and fsyncs the blob folder once. No
// blob name ever points at bytes that were not synced first, so a crash
// leaves, under each blob name, a whole blob or nothing; what a crash
// leaves of the rest is temporary files, which the next Open removes.
//
// Flushes run on a goroutine of their own, one at a time, while the next
// batch is written. Nothing added may be trusted before Close returns nil.
type blobBatch struct {
	s      *BlobStore
	filter *blobFilter // nil: ask the store about every blob

	mu       sync.Mutex
	cur      []pendingBlob
	curBytes int64
	inflight map[digest.Digest]bool // added and not yet installed
	err      error                  // the first flush error

	full chan []pendingBlob
	done chan struct{}

	dirOnce sync.Once
	dirErr  error
}

// pendingBlob is a blob written to tmp and not yet synced.
type pendingBlob struct {
	d   digest.Digest
	tmp string
}

// newBlobBatch starts a batch on s for a workspace of about files files.
// The caller must Close it.
func newBlobBatch(s *BlobStore, files int) *blobBatch {
	b := &blobBatch{s: s, filter: newBlobFilter(s, files), inflight: map[digest.Digest]bool{},
		full: make(chan []pendingBlob, 1), done: make(chan struct{})}
	go b.flusher()
	return b
}

// Add stores the bytes of r, which must hash to want, unless the store
// has the blob or the batch already holds it; it reports whether it wrote
// a new blob. On a mismatch nothing is stored and the error is a
// *DigestError. The blob is durable only once Close returns nil.
func (b *blobBatch) Add(want digest.Digest, r io.Reader) (bool, error) {
	if err := b.failed(); err != nil {
		return false, err
	}
	if has, err := b.has(want); err != nil || has {
		return false, err
	}
	if !b.reserve(want) {
		return false, nil
	}
	if b.filter != nil {
		b.filter.add(want) // from now on the store may hold it
	}
	b.s.rlock()
	tmp, n, err := b.write(want, r)
	b.s.runlock()
	if err != nil {
		b.release(want)
		return false, fmt.Errorf("put blob: %w", err)
	}
	b.push(pendingBlob{d: want, tmp: tmp}, n)
	return true, nil
}

// has reports whether the store holds d, asking it only when the filter
// cannot rule d out.
func (b *blobBatch) has(d digest.Digest) (bool, error) {
	if b.filter != nil && b.filter.absent(d) {
		return false, nil
	}
	return b.s.Has(d)
}

// AddBytes is Add for a blob held in memory, whose digest the caller has
// computed from data itself.
func (b *blobBatch) AddBytes(d digest.Digest, data []byte) (bool, error) {
	return b.Add(d, &trustedReader{data: data, d: d})
}

// trustedReader is a blob in memory whose digest is known: write skips
// hashing it again.
type trustedReader struct {
	data []byte
	d    digest.Digest
}

func (r *trustedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func (b *blobBatch) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// reserve claims d for one writer of the batch.
func (b *blobBatch) reserve(d digest.Digest) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inflight[d] {
		return false
	}
	b.inflight[d] = true
	return true
}

func (b *blobBatch) release(ds ...digest.Digest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range ds {
		delete(b.inflight, d)
	}
}

// write copies r to a new temporary file in the store, checking that the
// bytes hash to want, and starts the file's write-back; it does not sync.
func (b *blobBatch) write(want digest.Digest, r io.Reader) (string, int64, error) {
	s := b.s
	if err := b.mkdir(); err != nil {
		return "", 0, err
	}
	f, tmp, err := s.createTemp()
	if err != nil {
		return "", 0, err
	}
	// No vfs.StartWriteback here: starting the write-back of each small
	// file from the writer costs more CPU than the one syncfs of the
	// flush saves (measured: 10k x 100 KiB took twice as long with it).
	n, err := copyChecked(f, r, want)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = s.fsys.Remove(tmp)
		return "", n, err
	}
	return tmp, n, nil
}

// mkdir creates the store's folder durably the first time a blob is
// written.
func (b *blobBatch) mkdir() error {
	b.dirOnce.Do(func() { b.dirErr = vfs.MkdirAllDurable(b.s.fsys, b.s.dir, 0o755) })
	return b.dirErr
}

// copyChecked copies r to w and fails with a *DigestError if the bytes do
// not hash to want. A trustedReader's bytes are not hashed again.
func copyChecked(w io.Writer, r io.Reader, want digest.Digest) (int64, error) {
	if t, ok := r.(*trustedReader); ok && t.d == want {
		n, err := w.Write(t.data)
		return int64(n), err
	}
	h := digest.NewHasher()
	n, err := copyBuffered(io.MultiWriter(w, h), r)
	if err != nil {
		return n, err
	}
	if got := h.Digest(); got != want {
		return n, &DigestError{Path: "blob " + want.Hex(), Want: want, Got: got}
	}
	return n, nil
}

// push adds a written blob to the current batch and hands the batch to
// the flusher when it is full (waiting while the flusher is busy with the
// previous one and one more is queued).
func (b *blobBatch) push(p pendingBlob, size int64) {
	b.mu.Lock()
	b.cur = append(b.cur, p)
	b.curBytes += size
	var full []pendingBlob
	if len(b.cur) >= batchBlobs || b.curBytes >= batchBytes {
		full, b.cur, b.curBytes = b.cur, nil, 0
	}
	b.mu.Unlock()
	if full != nil {
		b.full <- full
	}
}

func (b *blobBatch) flusher() {
	defer close(b.done)
	for batch := range b.full {
		if err := b.failed(); err != nil {
			b.discard(batch)
			continue
		}
		if err := b.flush(batch); err != nil {
			b.mu.Lock()
			if b.err == nil {
				b.err = err
			}
			b.mu.Unlock()
			b.discard(batch)
		}
		ds := make([]digest.Digest, len(batch))
		for i, p := range batch {
			ds[i] = p.d
		}
		b.release(ds...)
	}
}

// flush makes one batch durable: its files, then their names, then the
// blob folder.
func (b *blobBatch) flush(batch []pendingBlob) error {
	s := b.s
	s.rlock()
	defer s.runlock()
	tmps := make([]string, len(batch))
	for i, p := range batch {
		tmps[i] = p.tmp
	}
	if err := vfs.SyncFiles(s.fsys, tmps); err != nil {
		return fmt.Errorf("put blobs: sync: %w", err)
	}
	for _, p := range batch {
		if err := s.installNoSync(p.tmp, p.d); err != nil {
			return fmt.Errorf("put blob %s: %w", p.d.Short(), err)
		}
	}
	if err := s.fsys.SyncDir(s.dir); err != nil {
		return fmt.Errorf("put blobs: sync %s: %w", s.dir, err)
	}
	return nil
}

// discard removes the temporary files of a batch that will not be
// installed (best effort: the next Open removes leftovers).
func (b *blobBatch) discard(batch []pendingBlob) {
	for _, p := range batch {
		_ = b.s.fsys.Remove(p.tmp)
	}
}

// Close flushes what is left and waits for every flush. After a nil
// error every blob added is durable under its name.
func (b *blobBatch) Close() error {
	b.mu.Lock()
	last := b.cur
	b.cur, b.curBytes = nil, 0
	b.mu.Unlock()
	if len(last) > 0 {
		b.full <- last
	}
	close(b.full)
	<-b.done
	return b.failed()
}
