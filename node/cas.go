package node

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// ErrBlobMismatch is returned when bytes offered to the CAS store do not
// hash to the digest they were offered under.
var ErrBlobMismatch = errors.New("node: blob digest mismatch")

// cas is a content-addressed store of blobs in one directory, named by the
// hex of their sha256. Every blob is verified as it is written, so a name
// always matches its content. Pre-copied blobs land here, not in a move's
// staging: they are harmless and may be collected at any time.
type cas struct {
	fsys vfs.FS
	dir  string
}

var casSeq atomic.Uint64

func (c cas) path(d digest.Digest) string { return filepath.Join(c.dir, d.Hex()) }

// Put stores r under d, verifying the content hashes to d. The blob is
// fsynced and renamed into place; the directory entry becomes durable at
// the next Sync. It returns whether the blob was new and the bytes read.
func (c cas) Put(d digest.Digest, r io.Reader) (bool, int64, error) {
	p, n, err := c.write(d, r)
	if err != nil || p == nil {
		return false, n, err
	}
	return true, n, p.finish()
}

// pendingBlob is a verified blob not yet in the store: either written to
// a temporary file of the store (tmp) or held in memory (data). finish
// writes it out if need be, syncs it and renames it into place. Until then
// it is invisible.
type pendingBlob struct {
	c    cas
	d    digest.Digest
	tmp  string
	data *[]byte // from chunkPool; nil when tmp holds the bytes
}

// write reads r into a temporary file, verifying it hashes to d. It
// returns nil (and reads r to its end) when the store already has d.
func (c cas) write(d digest.Digest, r io.Reader) (*pendingBlob, int64, error) {
	if c.has(d) {
		n, err := io.Copy(io.Discard, r)
		return nil, n, err
	}
	if err := c.mkdir(); err != nil {
		return nil, 0, err
	}
	tmp := c.tempName(d)
	n, err := c.fill(tmp, d, r)
	if err != nil {
		_ = c.fsys.Remove(tmp)
		return nil, n, fmt.Errorf("cas: put %s: %w", d.Short(), err)
	}
	return &pendingBlob{c: c, d: d, tmp: tmp}, n, nil
}

// receive is write for a blob of size bytes from a reader that checks d
// itself: one that returns an error instead of io.EOF unless the bytes it
// gave hash to d and number size (the blob frames of an api.StreamReader
// do). The bytes are not hashed a second time, and a blob of up to
// chunkSize bytes is only read into memory: finish, which a finisher runs
// on another goroutine while the stream goes on, creates and writes its
// file. Creating a file and writing to it cost the kernel about as much
// CPU as reading and checking the bytes, so the stream's goroutine keeps
// only the latter.
func (c cas) receive(d digest.Digest, size int64, r io.Reader) (*pendingBlob, int64, error) {
	if c.has(d) {
		n, err := io.Copy(io.Discard, r)
		return nil, n, err
	}
	if err := c.mkdir(); err != nil {
		return nil, 0, err
	}
	if size > chunkSize {
		tmp := c.tempName(d)
		n, err := c.fillChecked(tmp, r)
		if err != nil {
			_ = c.fsys.Remove(tmp)
			return nil, n, fmt.Errorf("cas: put %s: %w", d.Short(), err)
		}
		return &pendingBlob{c: c, d: d, tmp: tmp}, n, nil
	}
	bp := chunkPool.Get().(*[]byte)
	n, err := readToEnd(r, (*bp)[:chunkSize])
	if err != nil {
		chunkPool.Put(bp)
		return nil, int64(n), fmt.Errorf("cas: put %s: %w", d.Short(), err)
	}
	*bp = (*bp)[:n]
	return &pendingBlob{c: c, d: d, data: bp}, int64(n), nil
}

func (c cas) has(d digest.Digest) bool {
	_, err := c.fsys.Stat(c.path(d))
	return err == nil
}

func (c cas) mkdir() error {
	if err := vfs.MkdirAllDurable(c.fsys, c.dir, 0o700); err != nil {
		return fmt.Errorf("cas: %w", err)
	}
	return nil
}

func (c cas) tempName(d digest.Digest) string {
	return filepath.Join(c.dir, vfs.TempPrefix+d.Hex()+"-"+strconv.FormatUint(casSeq.Add(1), 36))
}

// finish makes the blob durable and gives it its name: write it out if it
// is in memory, fsync, then rename (so a name never holds bytes a crash
// could tear). The named file is then known to this process as verified
// (verifiedBlobs).
func (p *pendingBlob) finish() error {
	err := p.writeOut()
	if err == nil {
		err = syncFile(p.c.fsys, p.tmp)
	}
	if err == nil {
		err = p.c.fsys.Rename(p.tmp, p.c.path(p.d))
	}
	if err != nil {
		_ = p.c.fsys.Remove(p.tmp)
		return fmt.Errorf("cas: put %s: %w", p.d.Short(), err)
	}
	verifiedBlobs.note(p.c.fsys, p.c.path(p.d), p.d)
	return nil
}

// finishFresh gives the blob its name in the folder fresh, unsynced: a
// blob the frozen window brings with the prepare is made durable with the
// move's staging, in one batch with everything else (syncBatch), instead
// of by an fsync of its own before the prepare may be handled. Until then
// only this process may trust it: a node that starts removes the folder
// (freshDir), so a crash never leaves torn bytes under a blob's name.
func (p *pendingBlob) finishFresh(fresh string) error {
	err := p.writeOut()
	if err == nil {
		// Not durable: the staging batch syncs the agent's folder after
		// the fresh folder moves into the staging, and a node that starts
		// removes a fresh folder it finds.
		err = p.c.fsys.MkdirAll(fresh, 0o700)
	}
	name := filepath.Join(fresh, p.d.Hex())
	if err == nil {
		err = p.c.fsys.Rename(p.tmp, name)
	}
	if err != nil {
		_ = p.c.fsys.Remove(p.tmp)
		return fmt.Errorf("cas: put %s: %w", p.d.Short(), err)
	}
	verifiedBlobs.note(p.c.fsys, name, p.d)
	return nil
}

// writeOut writes a blob held in memory to a new temporary file.
func (p *pendingBlob) writeOut() error {
	if p.data == nil {
		return nil
	}
	defer func() {
		chunkPool.Put(p.data)
		p.data = nil
	}()
	p.tmp = p.c.tempName(p.d)
	f, err := p.c.fsys.OpenFile(p.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(*p.data)
	if err == nil && len(*p.data) >= writebackMin {
		// A blob of a prepare is synced later, in its staging's batch:
		// its bytes go to the disk meanwhile (advisory; the sync reports
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
func (c cas) fill(tmp string, d digest.Digest, r io.Reader) (int64, error) {
	h := digest.NewHasher()
	n, err := c.fillChecked(tmp, io.TeeReader(r, h))
	if err == nil && h.Digest() != d {
		err = fmt.Errorf("%w: announced %s, content is %s", ErrBlobMismatch, d, h.Digest())
	}
	return n, err
}

// fillChecked writes r to the new file tmp and starts its writeback, so
// that finish's fsync is short.
func (c cas) fillChecked(tmp string, r io.Reader) (int64, error) {
	f, err := c.fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := copyChunks(f, r)
	if err == nil {
		_ = vfs.StartWriteback(f) // advisory: finish's fsync reports failures
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// chunkSize is the size of the writes of copyChunks, and the largest blob
// receive holds in memory.
const chunkSize = 1 << 20

var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// copyChunks copies r to w in writes of up to chunkSize bytes: a stream
// read in TLS records of 16 KiB would otherwise cost a write system call
// per record.
func copyChunks(w io.Writer, r io.Reader) (int64, error) {
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	var n int64
	for {
		k, err := readAll(r, (*bp)[:chunkSize])
		if k > 0 {
			if _, werr := w.Write((*bp)[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err != nil || k < chunkSize {
			return n, err
		}
	}
}

// readAll reads from r into buf until buf is full (nil error), r ends
// (nil error, fewer bytes) or r fails. Unlike io.ReadFull it tells a
// clean end from a failure only by r's own error.
func readAll(r io.Reader, buf []byte) (int, error) {
	k := 0
	for k < len(buf) {
		m, err := r.Read(buf[k:])
		k += m
		if err == io.EOF {
			return k, nil
		}
		if err != nil {
			return k, err
		}
	}
	return k, nil
}

// readToEnd reads all of r into buf, which must be large enough, and
// returns the bytes read. It reads until r reports its end, even when buf
// is full: a checking reader checks at the end.
func readToEnd(r io.Reader, buf []byte) (int, error) {
	k, err := readAll(r, buf)
	if err != nil || k < len(buf) {
		return k, err
	}
	var one [1]byte
	m, err := r.Read(one[:])
	for m == 0 && err == nil {
		m, err = r.Read(one[:])
	}
	switch {
	case m > 0:
		return k, fmt.Errorf("%w: more than %d bytes", ErrBlobMismatch, len(buf))
	case err == io.EOF:
		return k, nil
	}
	return k, err
}

// Sync makes the store's directory entries durable (the directory itself
// was made durable when MkdirAllDurable created it).
func (c cas) Sync() error {
	if _, err := c.fsys.Stat(c.dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return c.fsys.SyncDir(c.dir)
}
