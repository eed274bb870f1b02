package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// Disk is the Store of blobs in one directory of a vfs.FS, named by the
// hex of their sha256. Every blob is verified as it is written, so a name
// always matches its content. The zero value is not usable: FS and Dir
// name the folder. Its methods may be called concurrently.
type Disk struct {
	FS  vfs.FS
	Dir string
}

var _ Store = Disk{}

var diskSeq atomic.Uint64

// Path returns the file that holds (or would hold) blob d.
func (c Disk) Path(d digest.Digest) string { return filepath.Join(c.Dir, d.Hex()) }

// Put stores r under d, verifying the content hashes to d. The blob is
// fsynced and renamed into place; the directory entry becomes durable at
// the next Sync. It returns whether the blob was new and the bytes read.
func (c Disk) Put(d digest.Digest, r io.Reader) (bool, int64, error) {
	p, n, err := c.Write(d, r)
	if err != nil || p == nil {
		return false, n, err
	}
	return true, n, p.Finish()
}

// Pending is a verified blob not yet in the store: either written to a
// temporary file of the store (tmp) or held in memory (data). Finish
// writes it out if need be, syncs it and renames it into place. Until then
// it is invisible.
type Pending struct {
	c    Disk
	d    digest.Digest
	tmp  string
	data *[]byte // from chunkPool; nil when tmp holds the bytes
}

// Write reads r into a temporary file, verifying it hashes to d. It
// returns nil (and reads r to its end) when the store already has d.
func (c Disk) Write(d digest.Digest, r io.Reader) (*Pending, int64, error) {
	if c.Has(d) {
		n, err := io.Copy(io.Discard, r)
		return nil, n, err
	}
	if err := c.mkdir(); err != nil {
		return nil, 0, err
	}
	tmp := c.tempName(d)
	n, err := c.fill(tmp, d, r)
	if err != nil {
		_ = c.FS.Remove(tmp)
		return nil, n, fmt.Errorf("cas: put %s: %w", d.Short(), err)
	}
	return &Pending{c: c, d: d, tmp: tmp}, n, nil
}

// Receive is Write for a blob of size bytes from a reader that checks d
// itself: one that returns an error instead of io.EOF unless the bytes it
// gave hash to d and number size (the blob frames of an api.StreamReader
// do). The bytes are not hashed a second time, and a blob of up to
// ChunkSize bytes is only read into memory: Finish, which a finisher runs
// on another goroutine while the stream goes on, creates and writes its
// file. Creating a file and writing to it cost the kernel about as much
// CPU as reading and checking the bytes, so the stream's goroutine keeps
// only the latter.
func (c Disk) Receive(d digest.Digest, size int64, r io.Reader) (*Pending, int64, error) {
	if c.Has(d) {
		n, err := io.Copy(io.Discard, r)
		return nil, n, err
	}
	if err := c.mkdir(); err != nil {
		return nil, 0, err
	}
	if size > ChunkSize {
		tmp := c.tempName(d)
		n, err := c.fillChecked(tmp, r)
		if err != nil {
			_ = c.FS.Remove(tmp)
			return nil, n, fmt.Errorf("cas: put %s: %w", d.Short(), err)
		}
		return &Pending{c: c, d: d, tmp: tmp}, n, nil
	}
	bp := chunkPool.Get().(*[]byte)
	n, err := ReadToEnd(r, (*bp)[:ChunkSize])
	if err != nil {
		chunkPool.Put(bp)
		return nil, int64(n), fmt.Errorf("cas: put %s: %w", d.Short(), err)
	}
	*bp = (*bp)[:n]
	return &Pending{c: c, d: d, data: bp}, int64(n), nil
}

// Has reports whether the store holds blob d.
func (c Disk) Has(d digest.Digest) bool {
	_, err := c.FS.Stat(c.Path(d))
	return err == nil
}

func (c Disk) mkdir() error {
	if err := vfs.MkdirAllDurable(c.FS, c.Dir, 0o700); err != nil {
		return fmt.Errorf("cas: %w", err)
	}
	return nil
}

func (c Disk) tempName(d digest.Digest) string {
	return filepath.Join(c.Dir, vfs.TempPrefix+d.Hex()+"-"+strconv.FormatUint(diskSeq.Add(1), 36))
}

// Finish makes the blob durable and gives it its name: write it out if it
// is in memory, fsync, then rename (so a name never holds bytes a crash
// could tear). The named file is then known to this process as verified
// (see CopyOver).
func (p *Pending) Finish() error {
	err := p.writeOut()
	if err == nil {
		err = SyncFile(p.c.FS, p.tmp)
	}
	if err == nil {
		err = p.c.FS.Rename(p.tmp, p.c.Path(p.d))
	}
	if err != nil {
		_ = p.c.FS.Remove(p.tmp)
		return fmt.Errorf("cas: put %s: %w", p.d.Short(), err)
	}
	verifiedBlobs.note(p.c.FS, p.c.Path(p.d), p.d)
	return nil
}

// FinishUnsynced gives the blob its name in the folder fresh, outside the
// store and unsynced: the caller makes it durable later, in one Batch with
// everything else, instead of by an fsync of its own. Until then only this
// process may trust it, so the caller must remove such a folder it finds
// after a restart: a crash may have torn the bytes under a blob's name.
func (p *Pending) FinishUnsynced(fresh string) error {
	err := p.writeOut()
	if err == nil {
		// Not durable: the caller's batch syncs it.
		err = p.c.FS.MkdirAll(fresh, 0o700)
	}
	name := filepath.Join(fresh, p.d.Hex())
	if err == nil {
		err = p.c.FS.Rename(p.tmp, name)
	}
	if err != nil {
		_ = p.c.FS.Remove(p.tmp)
		return fmt.Errorf("cas: put %s: %w", p.d.Short(), err)
	}
	verifiedBlobs.note(p.c.FS, name, p.d)
	return nil
}

// writeOut writes a blob held in memory to a new temporary file.
func (p *Pending) writeOut() error {
	if p.data == nil {
		return nil
	}
	defer func() {
		chunkPool.Put(p.data)
		p.data = nil
	}()
	p.tmp = p.c.tempName(p.d)
	f, err := p.c.FS.OpenFile(p.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(*p.data)
	if err == nil && len(*p.data) >= writebackMin {
		// A blob finished unsynced is synced later, in a batch: its
		// bytes go to the disk meanwhile (advisory; the sync reports
		// failures).
		_ = vfs.StartWriteback(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writebackMin is the smallest blob held in memory whose writeback starts
// as soon as it is written.
const writebackMin = 64 << 10

// fill writes r to the new file tmp, verifying it hashes to d.
func (c Disk) fill(tmp string, d digest.Digest, r io.Reader) (int64, error) {
	h := digest.NewHasher()
	n, err := c.fillChecked(tmp, io.TeeReader(r, h))
	if err == nil && h.Digest() != d {
		err = fmt.Errorf("%w: announced %s, content is %s", ErrBlobMismatch, d, h.Digest())
	}
	return n, err
}

// fillChecked writes r to the new file tmp and starts its writeback, so
// that finish's fsync is short.
func (c Disk) fillChecked(tmp string, r io.Reader) (int64, error) {
	f, err := c.FS.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := CopyChunks(f, r)
	if err == nil {
		_ = vfs.StartWriteback(f) // advisory: finish's fsync reports failures
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// Sync makes the store's directory entries durable (the directory itself
// was made durable when MkdirAllDurable created it).
func (c Disk) Sync() error {
	if _, err := c.FS.Stat(c.Dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return c.FS.SyncDir(c.Dir)
}

// Open returns blob d's bytes.
func (c Disk) Open(d digest.Digest) (io.ReadCloser, error) {
	f, err := c.FS.Open(c.Path(d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, d.Short())
	}
	return f, err
}

// List returns the blobs the folder holds (temporary files and names that
// are not digests are skipped).
func (c Disk) List() ([]digest.Digest, error) {
	ents, err := c.FS.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list: %w", err)
	}
	out := make([]digest.Digest, 0, len(ents))
	for _, e := range ents {
		if d, err := digest.FromHex(e.Name()); err == nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// Remove deletes blob d; the removal is durable at the next Sync.
func (c Disk) Remove(d digest.Digest) error {
	if err := c.FS.Remove(c.Path(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: remove %s: %w", d.Short(), err)
	}
	return nil
}
