package capsule

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
)

// window bounds the entries in flight between the walk and the sink: it
// is what a snapshot holds in memory, whatever the number of files.
const window = 1024

// slot is one entry on its way to the sink; a file's slot is filled by a
// worker, which then closes ready.
type slot struct {
	e      Entry
	ready  chan struct{} // nil for an entry that needs no work
	stored bool          // the file's blob was new
	err    error
}

// stream carries the second pass's entries: files to the workers, every
// entry in path order to the sink.
type stream struct {
	jobs  chan *slot
	order chan *slot
	stop  atomic.Bool // the sink failed: the walk gives up
	n     int         // entries emitted so far
}

var errStopped = errors.New("capsule: snapshot stopped")

func (s *stream) put(e Entry) {
	s.order <- &slot{e: e}
	s.n++
}

func (s *stream) file(p string) {
	sl := &slot{e: Entry{Path: p, Type: TypeFile}, ready: make(chan struct{})}
	s.jobs <- sl
	s.order <- sl
	s.n++
}

// record is a snapshot's second pass: it walks the tree in the order of
// the snapshot's paths, hashes the files on cfg.Workers goroutines, stores
// each blob the store lacks through one blobBatch, and hands every entry
// to sink in order. It returns once every blob is durable.
func (w *walker) record(store *BlobStore, cfg SnapshotConfig, res *SnapshotResult, sink entrySink) error {
	p := newLockedProgress(cfg.Progress)
	batch := newBlobBatch(store, w.files)
	s := &stream{jobs: make(chan *slot, window), order: make(chan *slot, window)}
	var wg sync.WaitGroup
	for range workers(cfg.Workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sl := range s.jobs {
				sl.stored, sl.err = w.recordFile(batch, &sl.e, p)
				close(sl.ready)
			}
		}()
	}
	drained := make(chan error, 1)
	go func() { drained <- drain(s, sink, res) }()
	err := w.emit("", s)
	close(s.jobs)
	close(s.order)
	wg.Wait()
	if derr := <-drained; derr != nil || errors.Is(err, errStopped) {
		err = derr
	}
	if cerr := batch.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// drain hands the entries to sink in order, waiting for each file's
// worker, checks each entry (FORMAT §5.1) and counts. After the first
// error it stops the walk and only drains.
func drain(s *stream, sink entrySink, res *SnapshotResult) error {
	var first error
	prev := ""
	for sl := range s.order {
		if sl.ready != nil {
			<-sl.ready
		}
		if first != nil {
			continue
		}
		first = sl.err
		if first == nil {
			first = checkEntry(prev, sl.e)
		}
		if first == nil {
			first = sink.add(sl.e)
		}
		if first != nil {
			s.stop.Store(true)
			continue
		}
		prev = sl.e.Path
		res.count(sl)
	}
	return first
}

// count adds one recorded entry to the result.
func (res *SnapshotResult) count(sl *slot) {
	switch sl.e.Type {
	case TypeFile:
		res.Files++
		res.Bytes += sl.e.Size
		if sl.stored {
			res.NewBlobs++
			res.NewBytes += sl.e.Size
		}
	case TypeDir:
		res.Dirs++
	case TypeSymlink:
		res.Symlinks++
	}
}

// checkEntry checks e as Snapshot.Validate would, given the path of the
// entry before it. That nothing lies below a file or a link, and that
// links stay inside the tree, holds by construction (the walk enters
// neither; the scan dropped escaping links).
func checkEntry(prev string, e Entry) error {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if err := manifest.ValidPath(e.Path); err != nil {
		add("%v", err)
	} else {
		e.check(0, add)
	}
	if prev != "" && prev >= e.Path {
		add("%q is out of order or repeated after %q", clip(e.Path), clip(prev))
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, probs)
	}
	return nil
}

// An item is one step of the walk of one directory, in the order of key.
type item struct {
	key  string // the name; a directory's walk has the name and "/"
	p    string
	kind int
}

const (
	itemFile = iota
	itemLink
	itemEmpty // a directory recorded as empty
	itemWalk  // the entries below a directory
)

// emit walks the tree below rel in the order of the snapshot's paths and
// puts every entry on s. Walking each directory's children by name, with
// "/" after a directory's name, gives that order: "a.txt" < "a/b" as '.'
// < '/'. A tree that no longer matches what the scan saw fails.
func (w *walker) emit(rel string, s *stream) error {
	items, err := w.items(rel)
	if err != nil {
		return err
	}
	for _, it := range items {
		if s.stop.Load() {
			return errStopped
		}
		switch it.kind {
		case itemFile:
			s.file(it.p)
		case itemEmpty:
			s.put(Entry{Path: it.p, Type: TypeDir})
		case itemLink:
			if target, ok := w.links[it.p]; ok {
				s.put(Entry{Path: it.p, Type: TypeSymlink, Target: target})
			} else if !w.seenLinks[it.p] {
				return changedError(it.p)
			}
		case itemWalk:
			before := s.n
			if err := w.emit(it.p, s); err != nil {
				return err
			}
			if below := s.n > before; below == w.empty[it.p] {
				return changedError(it.p)
			}
		}
	}
	return nil
}

// items lists the steps of the walk of directory rel, sorted.
func (w *walker) items(rel string) ([]item, error) {
	ents, err := w.children(rel, false)
	if err != nil {
		return nil, err
	}
	items := make([]item, 0, len(ents)+1)
	for _, e := range ents {
		p := path.Join(rel, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			items = append(items, item{key: e.Name() + "/", p: p, kind: itemWalk})
			if w.empty[p] {
				items = append(items, item{key: e.Name(), p: p, kind: itemEmpty})
			}
		case t.IsRegular():
			items = append(items, item{key: e.Name(), p: p, kind: itemFile})
		case t&fs.ModeSymlink != 0:
			items = append(items, item{key: e.Name(), p: p, kind: itemLink})
		} // a special file: the scan warned about it
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	return items, nil
}

func changedError(p string) error {
	return fmt.Errorf("%s changed while it was being recorded; record again", p)
}

// recordFile sets f's blob, size and exec bit and adds its blob to batch
// unless the store or the batch has it; it reports whether it added it. A
// file of less than bufSize bytes is read once: hashed in memory and
// stored from there. A larger one is hashed as it streams, then, when
// new, read again and checked to hash the same while it is copied.
func (w *walker) recordFile(batch *blobBatch, f *Entry, p Progress) (bool, error) {
	name := hostPath(w.root, f.Path)
	src, err := w.fsys.Open(name)
	if err != nil {
		return false, err
	}
	fi, err := src.Stat()
	if err != nil {
		src.Close()
		return false, err
	}
	if !fi.Mode().IsRegular() {
		src.Close()
		return false, changedError(f.Path)
	}
	f.Exec = fi.Mode()&0o111 != 0
	if fi.Size() < bufSize {
		stored, whole, err := w.storeSmall(batch, src, f, p)
		src.Close()
		if whole || err != nil {
			return stored, err
		}
	} else {
		src.Close()
	}
	if f.Blob, f.Size, err = hashFile(w.fsys, name, -1, p); err != nil {
		return false, err
	}
	return w.storeCopy(batch, *f)
}

// storeSmall reads src into a pooled buffer; if that was the whole file
// it sets f's blob and size and adds the blob to batch.
func (w *walker) storeSmall(batch *blobBatch, src io.Reader, f *Entry, p Progress) (stored, whole bool, err error) {
	buf := getBuf()
	defer putBuf(buf)
	n, err := io.ReadFull(src, *buf)
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
	case nil:
		return false, false, nil // it grew: hash it as a stream
	default:
		return false, false, err
	}
	if p != nil && n > 0 {
		p.Add(int64(n))
	}
	data := (*buf)[:n]
	f.Blob, f.Size = digest.FromBytes(data), int64(n)
	stored, err = batch.AddBytes(f.Blob, data)
	return stored, true, err
}

// storeCopy adds f's blob to batch, reading the file again, unless the
// store or the batch has it.
func (w *walker) storeCopy(batch *blobBatch, f Entry) (bool, error) {
	if has, err := batch.has(f.Blob); err != nil || has {
		return false, err
	}
	src, err := w.fsys.Open(hostPath(w.root, f.Path))
	if err != nil {
		return false, err
	}
	defer src.Close()
	stored, err := batch.Add(f.Blob, src)
	var de *DigestError
	if errors.As(err, &de) {
		return false, changedError(f.Path)
	}
	return stored, err
}
