//go:build linux

package capsule

import (
	"io"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// On the host's file system a file is hashed through its descriptor,
// without os.File: opening an os.File registers it with the network
// poller (an extra system call per file) and every read takes its locks.
//
// Large files are read on one goroutine and hashed on another
// (hashPipelined), not mapped: mapping saves the copy out of the page
// cache, but measured under load (bench/hash.sh, load ~10 on 2 CPUs) the
// mapped hash of 1 GiB took longer than the pipelined one, whose reader
// keeps a second thread busy and the hashing thread free of page faults
// and TLB flushes.

// hashHost hashes name when fsys is the host's file system; ok is false
// for any other FS, which the caller then reads through its interface.
func hashHost(fsys vfs.FS, name string, size int64, p Progress) (d digest.Digest, n int64, ok bool, err error) {
	if _, host := fsys.(vfs.OS); !host {
		return "", 0, false, nil
	}
	d, n, err = hashPath(name, size, p)
	return d, n, true, err
}

// hashPath hashes the file at name; size picks the method (-1: unknown).
func hashPath(name string, size int64, p Progress) (digest.Digest, int64, error) {
	fd, err := openRead(name)
	if err != nil {
		return "", 0, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	if size < 0 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err == nil {
			size = st.Size
		}
	}
	if size >= pipelineMin {
		d, n, err := hashPipelined(&fdReader{fd: fd}, p)
		if err != nil {
			err = &fs.PathError{Op: "read", Path: name, Err: err}
		}
		return d, n, err
	}
	return hashFD(digest.NewHasher(), fd, name, p)
}

// fdReader reads a descriptor from its start with pread.
type fdReader struct {
	fd  int
	off int64
}

func (r *fdReader) Read(b []byte) (int, error) {
	for {
		n, err := unix.Pread(r.fd, b, r.off)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		r.off += int64(n)
		return n, nil
	}
}

func openRead(name string) (int, error) {
	for {
		fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// hashFD adds the bytes of fd from offset h.Size() to its end to h, with
// a pooled buffer.
func hashFD(h *digest.Hasher, fd int, name string, p Progress) (digest.Digest, int64, error) {
	buf := getBuf()
	defer putBuf(buf)
	for {
		n, err := unix.Pread(fd, *buf, h.Size())
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return "", h.Size(), &fs.PathError{Op: "read", Path: name, Err: err}
		case n == 0:
			return h.Digest(), h.Size(), nil
		}
		h.Write((*buf)[:n])
		if p != nil {
			p.Add(int64(n))
		}
	}
}
