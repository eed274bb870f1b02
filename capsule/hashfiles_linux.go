//go:build linux

package capsule

import (
	"io/fs"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// pairBuf is each lane's read buffer: two of them stay in a core's L2
// cache between the copy out of the page cache and the hashing. (Mapping
// the small files instead, with MAP_POPULATE, was measured: it costs more
// system time in mmap, munmap and TLB flushes than the copy it saves.)
const pairBuf = 256 << 10

// pairMax is the size from which a file is hashed alone, pipelined
// (hashPath): the reading then overlaps the hashing.
const pairMax = pipelineMin

// hashFilesHost runs hashFiles on the host with paired lanes; false when
// fsys is not the host's or the CPU gains nothing from pairing.
func hashFilesHost(fsys vfs.FS, ts hashList, w int, p Progress, done hashDone) bool {
	if _, host := fsys.(vfs.OS); !host || !digest.Blocks2Native() {
		return false
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(w, ts.Len())) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pw := &pairWorker{ts: ts, next: &next, p: p, done: done}
			pw.run()
		}()
	}
	wg.Wait()
	return true
}

// pairWorker hashes files two at a time: each lane holds one file, and
// whenever both have whole blocks read, digest.Blocks2 hashes them
// together. A lane whose file ends takes the next; files of pairMax bytes
// and more are hashed alone (hashPath).
type pairWorker struct {
	ts    hashList
	next  *atomic.Int64
	p     Progress
	done  hashDone
	lanes [2]pairLane
}

// pairLane is one file being hashed by a pairWorker: buf[lo:hi] is read
// but not yet hashed, and the file's bytes before lane.Len()+hi-lo are
// consumed.
type pairLane struct {
	i      int    // index in ts; -1: idle
	name   string // the file's path, for errors
	fd     int
	lane   digest.Lane
	buf    []byte
	lo, hi int
	eof    bool
}

func (w *pairWorker) run() {
	a, b := &w.lanes[0], &w.lanes[1]
	a.i, b.i = -1, -1
	a.buf, b.buf = make([]byte, pairBuf), make([]byte, pairBuf)
	for {
		w.fill(a)
		w.fill(b)
		switch {
		case a.i < 0 && b.i < 0:
			return
		case a.i < 0 || b.i < 0: // the queue is empty: finish the last file alone
			w.finishAlone(a)
			w.finishAlone(b)
		default:
			k := min(a.hi-a.lo, b.hi-b.lo) &^ (digest.BlockSize - 1)
			digest.Blocks2(&a.lane, &b.lane, a.buf[a.lo:a.lo+k], b.buf[b.lo:b.lo+k])
			a.lo += k
			b.lo += k
			if w.p != nil {
				w.p.Add(2 * int64(k))
			}
		}
	}
}

// fill gives l a file with at least a block read, or one read to its
// end, or leaves it idle when no file is left; a file that ends is
// finished on the way.
func (w *pairWorker) fill(l *pairLane) {
	for {
		if l.i < 0 && !w.take(l) {
			return
		}
		if l.hi-l.lo >= digest.BlockSize {
			return
		}
		if l.eof {
			w.finish(l, l.lane.Digest(l.buf[l.lo:l.hi]), nil)
			continue
		}
		w.read(l)
	}
}

// take opens the next small file into l, hashing any large file met on
// the way on its own; false when none is left.
func (w *pairWorker) take(l *pairLane) bool {
	for {
		i := int(w.next.Add(1) - 1)
		if i >= w.ts.Len() {
			return false
		}
		t, ok := w.ts.Target(i)
		if !ok {
			continue
		}
		if t.size < 0 || t.size >= pairMax {
			d, n, err := hashPath(t.name, t.size, w.p)
			w.done(i, d, n, err)
			continue
		}
		fd, err := openRead(t.name)
		if err != nil {
			w.done(i, "", 0, &fs.PathError{Op: "open", Path: t.name, Err: err})
			continue
		}
		*l = pairLane{i: i, name: t.name, fd: fd, lane: digest.NewLane(), buf: l.buf}
		return true
	}
}

// read moves l's partial block to the front of its buffer and reads after
// it; a read of nothing marks the end of the file.
func (w *pairWorker) read(l *pairLane) {
	l.hi = copy(l.buf, l.buf[l.lo:l.hi])
	l.lo = 0
	for {
		n, err := unix.Pread(l.fd, l.buf[l.hi:], l.lane.Len()+int64(l.hi))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			w.finish(l, "", &fs.PathError{Op: "read", Path: l.name, Err: err})
			return
		case n == 0:
			l.eof = true
		}
		l.hi += n
		return
	}
}

// finishAlone hashes the rest of l's file without a partner.
func (w *pairWorker) finishAlone(l *pairLane) {
	if l.i < 0 {
		return
	}
	h := l.lane.Hasher()
	h.Write(l.buf[l.lo:l.hi])
	if w.p != nil {
		w.p.Add(int64(l.hi - l.lo))
	}
	l.lo = l.hi
	if l.eof {
		w.finishSized(l, h.Digest(), h.Size(), nil)
		return
	}
	d, n, err := hashFD(h, l.fd, l.name, w.p)
	w.finishSized(l, d, n, err)
}

// finish reports l's file with the bytes hashed so far and makes l idle.
func (w *pairWorker) finish(l *pairLane, d digest.Digest, err error) {
	if err == nil && w.p != nil {
		w.p.Add(int64(l.hi - l.lo))
	}
	w.finishSized(l, d, l.lane.Len()+int64(l.hi-l.lo), err)
}

func (w *pairWorker) finishSized(l *pairLane, d digest.Digest, n int64, err error) {
	unix.Close(l.fd)
	w.done(l.i, d, n, err)
	l.i, l.lo, l.hi = -1, 0, 0
}
