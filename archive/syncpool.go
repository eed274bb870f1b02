package archive

import (
	"fmt"
	"sync"

	"github.com/agentcapsule/capsule/vfs"
)

// syncWorkers is how many files an import fsyncs at once. Fsync waits on the
// disk, not the CPU, and a journaling file system commits concurrent fsyncs
// together, so overlapping them with the unpacking of the next files is
// most of an import's speed.
const syncWorkers = 8

// syncQueue bounds how many written files wait for their fsync (and stay open).
const syncQueue = 64

// syncPool fsyncs and closes written files in the background. Wait returns
// the first error; every file handed to it is closed either way.
type syncPool struct {
	files chan syncJob
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error
}

type syncJob struct {
	f    vfs.File
	name string
}

func newSyncPool() *syncPool {
	p := &syncPool{files: make(chan syncJob, syncQueue)}
	p.wg.Add(syncWorkers)
	for range syncWorkers {
		go p.work()
	}
	return p
}

func (p *syncPool) work() {
	defer p.wg.Done()
	for j := range p.files {
		err := j.f.Sync()
		if cerr := j.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			p.fail(ioError{fmt.Errorf("sync %s: %w", j.name, err)})
		}
	}
}

func (p *syncPool) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

// add queues f for fsync and close.
func (p *syncPool) add(f vfs.File, name string) { p.files <- syncJob{f, name} }

// wait stops the pool once every queued file is synced and closed.
func (p *syncPool) wait() error {
	close(p.files)
	p.wg.Wait()
	return p.err
}
