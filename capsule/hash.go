package capsule

import (
	"io"
	"runtime"
	"sync"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// bufSize is the read buffer for hashing and copying: large reads keep the
// hash, not the system calls, the bottleneck.
const bufSize = 1 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

func getBuf() *[]byte  { return bufPool.Get().(*[]byte) }
func putBuf(b *[]byte) { bufPool.Put(b) }

// hashFile hashes the whole of name, reporting progress, and returns the
// digest and the bytes hashed. size is the file's size if the caller knows
// it (it picks the method), or -1. On the host's file system it takes the
// fast path of hashHost (hash_linux.go).
func hashFile(fsys vfs.FS, name string, size int64, p Progress) (digest.Digest, int64, error) {
	if d, n, ok, err := hashHost(fsys, name, size, p); ok {
		return d, n, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	if size < 0 {
		if fi, err := f.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if size >= pipelineMin {
		return hashPipelined(f, p)
	}
	return hashReader(f, p)
}

// pipelineMin is the size from which a file is read and hashed on two
// goroutines: the copy out of the page cache then overlaps the hashing,
// which a single-threaded tool (openssl dgst, sha256sum) cannot do.
const pipelineMin = 8 << 20

// hashPipelined hashes r to its end, reading on one goroutine and hashing
// on the caller's, with a small ring of pooled buffers.
func hashPipelined(r io.Reader, p Progress) (digest.Digest, int64, error) {
	type chunk struct {
		buf *[]byte
		n   int
		err error
	}
	const depth = 3
	full := make(chan chunk, depth)
	free := make(chan *[]byte, depth)
	for range depth {
		free <- getBuf()
	}
	go func() {
		defer close(full)
		for buf := range free {
			n, err := io.ReadFull(r, *buf)
			if err == io.ErrUnexpectedEOF {
				err = io.EOF
			}
			full <- chunk{buf, n, err}
			if err != nil {
				return
			}
		}
	}()
	h := digest.NewHasher()
	var rerr error
	for c := range full { // the reader stops after its first error, closing full
		h.Write((*c.buf)[:c.n])
		if p != nil && c.n > 0 {
			p.Add(int64(c.n))
		}
		if c.err == nil {
			free <- c.buf
			continue
		}
		putBuf(c.buf)
		if c.err != io.EOF {
			rerr = c.err
		}
	}
	close(free)
	for b := range free {
		putBuf(b)
	}
	if rerr != nil {
		return "", h.Size(), rerr
	}
	return h.Digest(), h.Size(), nil
}

// hashReader hashes r to its end with a pooled 1 MiB buffer. It calls Read
// directly rather than io.Copy, which would pick a small buffer through
// the file's WriterTo.
func hashReader(r io.Reader, p Progress) (digest.Digest, int64, error) {
	h := digest.NewHasher()
	buf := getBuf()
	defer putBuf(buf)
	for {
		n, err := r.Read(*buf)
		if n > 0 {
			h.Write((*buf)[:n])
			if p != nil {
				p.Add(int64(n))
			}
		}
		if err == io.EOF {
			return h.Digest(), h.Size(), nil
		}
		if err != nil {
			return "", h.Size(), err
		}
	}
}

// workers returns n, or GOMAXPROCS (the CPUs this process may use) when n <= 0.
func workers(n int) int {
	if n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// lockedProgress makes a Progress safe to call from several goroutines.
type lockedProgress struct {
	mu sync.Mutex
	p  Progress
}

func newLockedProgress(p Progress) Progress {
	if p == nil {
		return nil
	}
	return &lockedProgress{p: p}
}

func (l *lockedProgress) Add(n int64) {
	l.mu.Lock()
	l.p.Add(n)
	l.mu.Unlock()
}
