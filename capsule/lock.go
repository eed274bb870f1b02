package capsule

import "sync"

// dirLock coordinates, within one process, everything that writes one
// capsule folder, whichever Capsule value does it: the node opens a capsule
// again for each operation, and recovery (which removes temporary files and
// rolls an unfinished commit back or forward) must never run while another
// goroutine is in the middle of a blob write or a commit. Across processes
// there is no lock: one process writes a capsule at a time (FORMAT §4.2).
type dirLock struct {
	rw     sync.RWMutex // recovery holds it exclusively; blob writes and commits share it
	commit sync.Mutex   // one commit at a time
}

// dirLocks maps a capsule folder's absolute path to its *dirLock. Two file
// systems with the same path (two vfs.Mem in parallel tests) share a lock,
// which only serialises them.
var dirLocks sync.Map

func lockFor(dir string) *dirLock {
	v, _ := dirLocks.LoadOrStore(absClean(dir), &dirLock{})
	return v.(*dirLock)
}
