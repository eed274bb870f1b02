package archive

import (
	"github.com/agentcapsule/capsule/vfs"
)

// earlyWriteback is how many bytes ExportFile writes between two
// background fsyncs of its output.
const earlyWriteback = 64 << 20

// writeback writes to f and, each time another earlyWriteback bytes have
// been written, fsyncs f in the background. At most one fsync runs at a
// time: the next one waits for it, so the number of fsyncs depends only on
// the size written, and a disk slower than the export slows the export
// instead of piling up work.
type writeback struct {
	f       vfs.File
	pending int64
	done    chan error // nil when no fsync runs
	err     error      // the first fsync error
}

func newWriteback(f vfs.File) *writeback { return &writeback{f: f} }

func (w *writeback) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	w.pending += int64(n)
	if err == nil && w.pending >= earlyWriteback {
		w.pending = 0
		w.collect()
		if w.err != nil {
			return n, w.err
		}
		done := make(chan error, 1)
		go func() { done <- w.f.Sync() }()
		w.done = done
	}
	return n, err
}

// collect waits for the running fsync, if any, and keeps its error.
func (w *writeback) collect() {
	if w.done == nil {
		return
	}
	if err := <-w.done; err != nil && w.err == nil {
		w.err = err
	}
	w.done = nil
}

// wait waits for the last background fsync and returns the first error.
func (w *writeback) wait() error {
	w.collect()
	return w.err
}
