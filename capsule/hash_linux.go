//go:build linux

package capsule

import (
	"errors"
	"io/fs"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// On the host's file system a file is hashed through its descriptor,
// without os.File: opening an os.File registers it with the network
// poller (an extra system call per file) and every read takes its locks.
// When verify is one process among many on a busy machine, its speed is
// its CPU time per byte, so the per-file and per-byte costs are what count.

// mapMin is the size from which a file is mapped and hashed in place
// rather than copied into a buffer: the copy out of the page cache costs
// about a fifth of the hashing, while mapping costs two system calls and
// a TLB flush, which a small file does not repay.
const mapMin = 1 << 20

// mapChunk is how much of a mapping is made present at a time, ahead of
// the hashing.
const mapChunk = 4 << 20

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
	h := digest.NewHasher()
	if size >= mapMin && hashMapped(h, fd, size, p) {
		return hashFD(h, fd, name, p) // bytes appended since the mapping, as a read would see them
	}
	return hashFD(digest.NewHasher(), fd, name, p)
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

// hashMapped maps the first size bytes of fd and adds them to h. It
// returns false, with h untouched, when the file cannot be mapped; and
// false, with h reset, when the file shrank under the mapping (a read of
// a page past the new end faults), so that the caller reads it instead.
func hashMapped(h *digest.Hasher, fd int, size int64, p Progress) bool {
	if int64(int(size)) != size {
		return false
	}
	m, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return false
	}
	defer unix.Munmap(m)
	_ = unix.Madvise(m, unix.MADV_SEQUENTIAL)
	if err := hashMapping(h, m, p); err != nil {
		h.Reset()
		return false
	}
	return true
}

// errFault is a fault while reading a mapping: the file shrank.
var errFault = errors.New("capsule: mapped file shrank")

// hashMapping adds m to h chunk by chunk, while a second goroutine makes
// the next chunks present (MADV_POPULATE_READ), so that the hashing
// goroutine neither copies nor takes page faults, and drops each chunk
// once hashed. A fault on reading m
// is returned as errFault instead of crashing the process.
func hashMapping(h *digest.Hasher, m []byte, p Progress) (err error) {
	ready := make(chan int, 2) // ends of the chunks made present
	stop := make(chan struct{})
	go prefault(m, ready, stop)
	defer func() {
		close(stop)
		for range ready { // prefault must not outlive the mapping
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			err = errFault
		}
	}()
	off := 0
	for end := range ready {
		h.Write(m[off:end])
		if p != nil {
			p.Add(int64(end - off))
		}
		// Drop the hashed pages from the mapping (they stay in the page
		// cache), so that the process's resident set stays at a few
		// chunks whatever the file's size.
		_ = unix.Madvise(m[off:end], unix.MADV_DONTNEED)
		off = end
	}
	return nil
}

// prefault makes m present chunk by chunk, sending the end of each on
// ready, until m is done or stop is closed. Errors are ignored: a kernel
// without MADV_POPULATE_READ (before Linux 5.14) leaves the pages to be
// faulted in by the reader, and a file that shrank is caught there.
func prefault(m []byte, ready chan<- int, stop <-chan struct{}) {
	defer close(ready)
	for off := 0; off < len(m); off += mapChunk {
		end := min(off+mapChunk, len(m))
		_ = unix.Madvise(m[off:end], unix.MADV_POPULATE_READ)
		select {
		case ready <- end:
		case <-stop:
			return
		}
	}
}
