package node

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

// Has reports whether the blob is present with the expected size.
func (c cas) Has(d digest.Digest, size int64) bool {
	fi, err := c.fsys.Stat(c.path(d))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

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

// pendingBlob is a verified blob written to a temporary file of the store:
// finish syncs it and renames it into place. Until then it is invisible.
type pendingBlob struct {
	c   cas
	d   digest.Digest
	tmp string
}

// write reads r into a temporary file, verifying it hashes to d. It
// returns nil (and reads r to its end) when the store already has d.
func (c cas) write(d digest.Digest, r io.Reader) (*pendingBlob, int64, error) {
	if _, err := c.fsys.Stat(c.path(d)); err == nil {
		n, err := io.Copy(io.Discard, r)
		return nil, n, err
	}
	if err := vfs.MkdirAllDurable(c.fsys, c.dir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("cas: %w", err)
	}
	tmp := filepath.Join(c.dir, vfs.TempPrefix+d.Hex()+"-"+strconv.FormatUint(casSeq.Add(1), 36))
	n, err := c.fill(tmp, d, r)
	if err != nil {
		_ = c.fsys.Remove(tmp)
		return nil, n, fmt.Errorf("cas: put %s: %w", d.Short(), err)
	}
	return &pendingBlob{c: c, d: d, tmp: tmp}, n, nil
}

// finish makes the blob durable and gives it its name: fsync, then rename
// (so a name never holds bytes a crash could tear).
func (p *pendingBlob) finish() error {
	err := syncFile(p.c.fsys, p.tmp)
	if err == nil {
		err = p.c.fsys.Rename(p.tmp, p.c.path(p.d))
	}
	if err != nil {
		_ = p.c.fsys.Remove(p.tmp)
		return fmt.Errorf("cas: put %s: %w", p.d.Short(), err)
	}
	return nil
}

func (c cas) fill(tmp string, d digest.Digest, r io.Reader) (int64, error) {
	f, err := c.fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	h := digest.NewHasher()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil && h.Digest() != d {
		err = fmt.Errorf("%w: announced %s, content is %s", ErrBlobMismatch, d, h.Digest())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// Sync makes the store's directory entries durable (the directory itself
// was made durable when MkdirAllDurable created it).
func (c cas) Sync() error {
	if _, err := c.fsys.Stat(c.dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return c.fsys.SyncDir(c.dir)
}
