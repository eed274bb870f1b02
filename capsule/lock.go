package capsule

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentcapsule/capsule/vfs"
)

// dirLock coordinates, within one process, everything that writes one
// capsule folder, whichever Capsule value does it: the node opens a capsule
// again for each operation, and recovery (which removes temporary files and
// rolls an unfinished commit back or forward) must never run while another
// goroutine is in the middle of a blob write or a commit. Across processes,
// a host lock (LockHost) keeps every other process from committing to the
// capsules under a host's folder (FORMAT §4.2).
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

// A host is a process that hosts the capsules under a folder (a node, for
// its data folder) and so must be their only writer (FORMAT §4.2). It holds
// an exclusive flock on HostLockFile in that folder for its lifetime, and
// keeps a HostRecord beside it naming itself. Every commit of a capsule
// folder inside a host's folder, from any other process, is refused with a
// *HeldError naming the host, and recovery leaves it to the host.
const (
	// HostLockFile is the lock file of a host's folder; it is never removed.
	HostLockFile = "node.lock"
	// HostRecordFile is the HostRecord of the process holding the lock.
	HostRecordFile = "node.lock.json"
)

// ErrHeld marks a refusal because another process hosts the folder.
var ErrHeld = errors.New("capsule: held by another process")

// HostRecord names the process holding a host lock (docs/PROTOCOL.md §5).
// It is a stored record: V is its schema version (the coordination kind's)
// and Release the release that wrote it.
type HostRecord struct {
	V       int    `json:"v"`
	Release string `json:"release"`
	Node    string `json:"node"`             // the node's ID
	PID     int    `json:"pid"`              // its process ID
	Listen  string `json:"listen,omitempty"` // its peer API address, once it listens
	Socket  string `json:"socket,omitempty"` // its local API socket, once it listens
	Started string `json:"started"`          // when it took the lock (RFC 3339, UTC)
}

// String describes the holder for an error message.
func (r HostRecord) String() string {
	s := fmt.Sprintf("node %s (pid %d", r.Node, r.PID)
	if r.Listen != "" {
		s += ", listening on " + r.Listen
	}
	if r.Socket != "" {
		s += ", socket " + r.Socket
	}
	return s + ", started " + r.Started + ")"
}

// brief names the holder in a refusal of a write: its ID, PID and listen
// address.
func (r HostRecord) brief() string {
	s := fmt.Sprintf("node %s (pid %d", r.Node, r.PID)
	if r.Listen != "" {
		s += ", " + r.Listen
	}
	return s + ")"
}

// HeldError is a refusal because another process hosts Dir: Host is read
// from its record (zero, with RecordErr set, if the record is unreadable).
// Path is the capsule folder a refused write was for, as the writer named
// it, or "" when the refusal is of a second host of Dir. Its message is
// complete (it names the folder and the node, and says what to do): wrap
// it in no prefix.
type HeldError struct {
	Dir       string // the folder the host holds
	Path      string // the capsule folder whose write was refused, or ""
	Host      HostRecord
	RecordErr error
}

func (e *HeldError) Error() string {
	who := e.Host.brief()
	if e.RecordErr != nil {
		who = fmt.Sprintf("another node process (its record %s: %v)", filepath.Join(e.Dir, HostRecordFile), e.RecordErr)
	}
	if e.Path == "" {
		if e.RecordErr == nil {
			who = e.Host.String()
		}
		return fmt.Sprintf("data folder %s is in use by %s: a data folder has one node; stop that node or use another folder", e.Dir, who)
	}
	return fmt.Sprintf("%s is hosted by %s: stop the node or use the capsule agent commands", e.Path, who)
}

// Unwrap returns ErrHeld.
func (e *HeldError) Unwrap() error { return ErrHeld }

// Host is a held host lock.
type Host struct {
	fsys vfs.FS
	dir  string
	f    vfs.File
}

// hosts holds the folders this process hosts (absolute paths), so that
// its own commits pass and a second host in the same process is refused
// even on a file system without flock (vfs.Mem).
var hosts sync.Map

// LockHost makes this process the host of dir: it takes the exclusive lock
// on dir/HostLockFile, without waiting, and writes rec as the record beside
// it. If another process (or another Host of this one) holds it, it fails
// with a *HeldError naming that holder.
func LockHost(fsys vfs.FS, dir string, rec HostRecord) (*Host, error) {
	key := absClean(dir)
	if _, loaded := hosts.LoadOrStore(key, true); loaded {
		return nil, heldError(fsys, dir, "")
	}
	h, err := lockHost(fsys, dir)
	if err != nil {
		hosts.Delete(key)
		return nil, err
	}
	if err := h.Update(rec); err != nil {
		h.Release()
		return nil, err
	}
	return h, nil
}

func lockHost(fsys vfs.FS, dir string) (*Host, error) {
	f, err := fsys.OpenFile(filepath.Join(dir, HostLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := vfs.TryLock(f); err != nil {
		f.Close()
		if errors.Is(err, vfs.ErrLocked) {
			return nil, heldError(fsys, dir, "")
		}
		return nil, err
	}
	return &Host{fsys: fsys, dir: dir, f: f}, nil
}

// Update rewrites the host's record (atomically: a reader sees the old
// record or the new one).
func (h *Host) Update(rec HostRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := vfs.WriteFile(h.fsys, filepath.Join(h.dir, HostRecordFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("host record: %w", err)
	}
	return nil
}

// Release gives the lock up. The lock file and the record stay: the record
// is only read while some process holds the lock, and the next host
// rewrites it.
func (h *Host) Release() error {
	hosts.Delete(absClean(h.dir))
	return h.f.Close()
}

// heldError is the refusal of a write to path (or, for "", of a second
// host) because another process hosts dir.
func heldError(fsys vfs.FS, dir, path string) error {
	e := &HeldError{Dir: dir, Path: path}
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, HostRecordFile))
	if err == nil {
		err = json.Unmarshal(b, &e.Host)
	}
	e.RecordErr = err
	return e
}

// CheckHost refuses, with a *HeldError, to write the capsule folder dir
// while another process hosts a folder holding it; it returns nil when no
// host holds it or this process is the host.
func CheckHost(fsys vfs.FS, dir string) error {
	return checkHost(fsys, dir, "")
}

// checkHost is CheckHost for the write op names: a *HeldError is returned
// as it is (its message is whole), any other error wrapped in op.
func checkHost(fsys vfs.FS, dir, op string) error {
	err := checkHostDir(fsys, dir)
	var he *HeldError
	if err == nil || op == "" || errors.As(err, &he) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

func checkHostDir(fsys vfs.FS, dir string) error {
	for a := absClean(dir); ; {
		if _, ok := hosts.Load(a); ok {
			return nil
		}
		if held, err := probeHost(fsys, a); err != nil || held {
			if err != nil {
				return err
			}
			return heldError(fsys, a, dir)
		}
		up := filepath.Dir(a)
		if up == a {
			return nil
		}
		a = up
	}
}

// probeHost reports whether another process holds dir's host lock.
func probeHost(fsys vfs.FS, dir string) (bool, error) {
	name := filepath.Join(dir, HostLockFile)
	if _, err := fsys.Lstat(name); err != nil {
		return false, nil
	}
	f, err := fsys.Open(name)
	if err != nil {
		return false, fmt.Errorf("check %s: %w", name, err)
	}
	defer f.Close() // closing our descriptor drops our probe's lock
	err = tryShared(f)
	if errors.Is(err, vfs.ErrLocked) {
		return true, nil
	}
	return false, err
}
