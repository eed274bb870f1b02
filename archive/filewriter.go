package archive

import (
	"fmt"
	"os"
	"sync"

	"github.com/agentcapsule/capsule/vfs"
)

// Pipelining bounds: a file of at most smallFile bytes is read whole from
// the archive (and hashed) by the extractor and handed to the fileWriter,
// which creates and fills it while the extractor reads the next entries;
// at most writeQueue such files wait, so the pipeline holds at most
// writeQueue x smallFile bytes (8 MiB). Larger files are written by the
// extractor itself, as before.
const (
	smallFile  = 256 << 10
	writeQueue = 32
)

// fileWriter creates, fills and closes the small files of an extraction
// on a goroutine of its own. Unpacking many small files is mostly the
// kernel's work of creating them; the tar parsing and the hashing of
// blobs, on the extractor's goroutine, then overlap it on a second core.
// The first failure is kept and reported by failed and close; after it,
// queued files are dropped.
type fileWriter struct {
	fsys    vfs.FS
	jobs    chan writeJob
	pending sync.WaitGroup // files queued and not yet written
	stopped chan struct{}
	free    sync.Pool // *[]byte of smallFile capacity

	mu  sync.Mutex
	err error
}

// writeJob is one file to create: its host path, its name in the archive
// (for errors) and its bytes, in a buffer of the pool.
type writeJob struct {
	path, name string
	buf        *[]byte
}

func newFileWriter(fsys vfs.FS) *fileWriter {
	w := &fileWriter{fsys: fsys, jobs: make(chan writeJob, writeQueue), stopped: make(chan struct{})}
	w.free.New = func() any { b := make([]byte, 0, smallFile); return &b }
	go w.run()
	return w
}

// buffer returns an empty buffer for a file of up to smallFile bytes.
func (w *fileWriter) buffer() *[]byte {
	b := w.free.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

// write queues the file path, named name in the archive, holding the
// bytes of buf (from buffer), which the writer takes over.
func (w *fileWriter) write(path, name string, buf *[]byte) {
	w.pending.Add(1)
	w.jobs <- writeJob{path: path, name: name, buf: buf}
}

func (w *fileWriter) run() {
	defer close(w.stopped)
	for j := range w.jobs {
		if w.failed() == nil {
			if err := w.create(j); err != nil {
				w.fail(err)
			}
		}
		w.free.Put(j.buf)
		w.pending.Done()
	}
}

// create writes one file, as extractor.writeFile does for a large one.
func (w *fileWriter) create(j writeJob) error {
	f, err := w.fsys.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return ioError{fmt.Errorf("create %s: %w", j.name, err)}
	}
	if _, err := f.Write(*j.buf); err != nil {
		f.Close()
		return ioError{fmt.Errorf("write %s: %w", j.name, err)}
	}
	if err := f.Close(); err != nil {
		return ioError{fmt.Errorf("close %s: %w", j.name, err)}
	}
	return nil
}

func (w *fileWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// failed returns the first failure so far.
func (w *fileWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// wait returns once every queued file is written (or dropped), with the
// first failure: after a nil error every file queued so far exists.
func (w *fileWriter) wait() error {
	w.pending.Wait()
	return w.failed()
}

// close writes what is queued, stops the goroutine and returns the first
// failure. Nothing is written after it returns.
func (w *fileWriter) close() error {
	close(w.jobs)
	<-w.stopped
	return w.failed()
}
