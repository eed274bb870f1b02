package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// verifiedBlobs remembers the blob files this process wrote into a CAS
// store after checking their bytes against their digest, so that copying
// such a file into a workspace (the shadow, a staging) need not hash it
// again. A file is known by its digest and identity: inode, change time
// (which every write, rename into place and chmod moves) and size. A name
// whose file was since replaced, rewritten or touched is hashed again,
// within the grain of the change time (a clock tick on some kernels): what
// is trusted is that no writer of this process touches a stored blob, not
// that nobody else can. A renamed folder (the store becomes a
// staging's blob folder by one rename) keeps its files known. Memory
// only: after a restart, when a crash may have left anything on disk,
// every blob is hashed again. File systems that report no inode (vfs.Mem)
// never skip the hash.
var verifiedBlobs = &blobTrust{}

// maxTrusted bounds the memory of a blobTrust; past it the set starts over
// (older blobs are hashed again when copied, which is only slower).
const maxTrusted = 1 << 20

type blobTrust struct {
	mu sync.Mutex
	m  map[trustKey]bool
}

type trustKey struct {
	d     digest.Digest
	ino   uint64
	ctime int64
	size  int64
}

func trustKeyOf(fi fs.FileInfo, d digest.Digest) (trustKey, bool) {
	ino, ctime := InodeOf(fi)
	return trustKey{d: d, ino: ino, ctime: ctime, size: fi.Size()}, ino != 0 && fi.Mode().IsRegular()
}

// note records that the file name holds the bytes of d, verified by this
// process. The caller has just written and verified it.
func (t *blobTrust) note(fsys vfs.FS, name string, d digest.Digest) {
	fi, err := fsys.Lstat(name)
	if err != nil {
		return
	}
	k, ok := trustKeyOf(fi, d)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTrusted {
		t.m = map[trustKey]bool{}
	}
	t.m[k] = true
}

// has reports whether fi describes a file noted as holding d.
func (t *blobTrust) has(fi fs.FileInfo, d digest.Digest) bool {
	k, ok := trustKeyOf(fi, d)
	if !ok {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[k]
}

// CopyOver copies the blob file src into dst with mode perm, checking
// that it holds the size bytes of want: by hashing them as they are
// copied, or, for a blob this process verified when it stored it
// (verifiedBlobs), by its size alone, letting the kernel copy the bytes
// (copy_file_range between OS files). It then starts the writeback of dst:
// dst is not synced, but the sync that must follow finds its bytes on
// their way to the disk.
//
// Without over, dst must not exist. With over, a dst that is a file of its
// own (a regular file with one link) is written over in place, and
// anything else there is replaced; CopyOver reports whether it wrote in
// place. Creating a file costs far more than truncating one on some file
// systems (about 1 ms against 30 µs on this project's test machine), and a
// file written over leaves its directory unchanged. Over is only for
// folders nothing trusts until a sync that follows (a move's staging, a
// shadow whose shadow.json is gone): a crash before that sync may leave
// dst holding anything.
func CopyOver(fsys vfs.FS, src, dst string, want digest.Digest, size int64, perm fs.FileMode, over bool) (bool, error) {
	in, err := fsys.Open(src)
	if err != nil {
		return false, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return false, err
	}
	out, replaced, err := openOver(fsys, dst, perm, over)
	if err != nil {
		return false, err
	}
	if verifiedBlobs.has(fi, want) {
		err = copyKnown(out, in, size)
	} else {
		err = copyHashed(out, in, want, size)
	}
	if err != nil {
		err = fmt.Errorf("%w: %s", err, src)
	}
	if err == nil {
		_ = vfs.StartWriteback(out) // advisory: the batch's sync reports failures
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Chmod(dst, perm) // exact mode, whatever the umask
	}
	if err != nil {
		_ = fsys.Remove(dst)
	}
	return replaced, err
}

// openOver opens dst for writing from its start. When over is set, a dst
// that is a regular file with one link is opened in place (replaced), and
// anything else there is removed first; otherwise dst must not exist.
func openOver(fsys vfs.FS, dst string, perm fs.FileMode, over bool) (vfs.File, bool, error) {
	if over && ownFile(fsys, dst) {
		f, err := fsys.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, perm)
		return f, err == nil, err
	}
	if over {
		if err := fsys.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, false, err
		}
	}
	f, err := fsys.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	return f, false, err
}

// WriteOver writes data to name, in place when name is a file of its own
// (see CopyOver), else as a new file (replacing whatever was there),
// unsynced. It reports whether it wrote in place.
func WriteOver(fsys vfs.FS, name string, data []byte, perm fs.FileMode) (bool, error) {
	f, replaced, err := openOver(fsys, name, perm, true)
	if err != nil {
		return false, err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Chmod(name, perm)
	}
	if err != nil {
		_ = fsys.Remove(name)
	}
	return replaced, err
}

// ownFile reports whether name is a regular file with exactly one link,
// as far as the file system says (vfs.Mem does not: never).
func ownFile(fsys vfs.FS, name string) bool {
	fi, err := fsys.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return linkCount(fi) == 1
}

// copyKnown copies a blob whose content is known to be right: io.Copy
// between two OS files is one copy_file_range, no byte passing through
// this process.
func copyKnown(out, in vfs.File, size int64) error {
	n, err := io.Copy(out, in)
	if err == nil && n != size {
		err = fmt.Errorf("%w: %d bytes, want %d", ErrBlobMismatch, n, size)
	}
	return err
}

func copyHashed(out, in vfs.File, want digest.Digest, size int64) error {
	h := digest.NewHasher()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if err == nil && (n != size || h.Digest() != want) {
		err = fmt.Errorf("%w: not the %d bytes of %s", ErrBlobMismatch, size, want.Short())
	}
	return err
}
