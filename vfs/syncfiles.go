package vfs

import (
	"errors"
	"io/fs"
	"sync"
	"syscall"
)

// FileSyncer is an optional interface of an FS. SyncFiles makes the
// contents of every named regular file durable, as File.Sync of each one
// would, in one call that may cost far less than one fsync per file. It
// makes no directory entry durable: a caller still syncs each directory
// whose entries it changed (the new names of the files among them).
type FileSyncer interface {
	SyncFiles(names []string) error
}

// SyncFiles makes the contents of the named regular files durable: after
// it returns nil, a crash keeps each file's contents as they were when
// SyncFiles was called, under every name of it that is durable. Nothing
// else is promised (in particular no name is made durable), though an
// implementation may do more: OS, on Linux, syncs the whole file system
// holding a large batch with one syncfs(2). An FS that is not a
// FileSyncer gets each file opened and synced, several at once.
func SyncFiles(fsys FS, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if s, ok := fsys.(FileSyncer); ok {
		return s.SyncFiles(names)
	}
	return syncEach(fsys, names)
}

// syncWorkers bounds the concurrent fsyncs of syncEach. Concurrent fsyncs
// share the file system's journal commits, so eight cost little more than
// one.
const syncWorkers = 8

// syncEach opens and fsyncs every file of names, syncWorkers at once, and
// returns every error joined.
func syncEach(fsys FS, names []string) error {
	errs := make([]error, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(syncWorkers, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = syncOne(fsys, names[i])
			}
		}()
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// syncOne fsyncs one regular file.
func syncOne(fsys FS, name string) error {
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "syncfiles", Path: name, Err: syscall.EINVAL}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncFiles implements FileSyncer: each named file's current contents and
// mode become its durable ones, as Sync of each would make them. It fails,
// changing nothing, if a name does not resolve to a regular file.
func (m *Mem) SyncFiles(names []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	nodes := make([]*node, len(names))
	for i, name := range names {
		n, err := m.lookup(name, true)
		if err == nil && !n.isRegular() {
			err = syscall.EINVAL
		}
		if err != nil {
			return &fs.PathError{Op: "syncfiles", Path: name, Err: err}
		}
		nodes[i] = n
	}
	for _, n := range nodes {
		n.syncData()
	}
	return nil
}

// SyncFiles implements FileSyncer as one durable step, OpSyncFiles, whose
// record names the first file: a rule matches the step by that name or a
// directory above it. The inner FS syncs the files with its own SyncFiles
// when it has one.
func (f *Faulty) SyncFiles(names []string) error {
	if len(names) == 0 {
		return nil
	}
	return f.run(OpRecord{Op: OpSyncFiles, Path: names[0]}, func() error { return SyncFiles(f.inner, names) })
}
