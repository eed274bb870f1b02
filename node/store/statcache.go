package store

import (
	"errors"
	"io/fs"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/digest"
)

// A workspace is recorded often (a move records it at every pre-copy round
// and once more while the agent is frozen). Hashing a large workspace each
// time would be O(workspace), so the node keeps a stat cache: a file
// whose size, modification time, mode and inode are those it had when it
// was last hashed keeps its digest. RecordWork produces exactly the
// snapshot capsule.BuildSnapshot would (TestRecordWorkMatchesBuildSnapshot checks it
// on random trees); a workspace holding what this fast path does not handle
// (symbolic links, special files) is recorded by capsule.BuildSnapshot.

// RacyWindow is how old a file's modification time must be, relative to
// the moment it was hashed, for its digest to be reused: a file written in
// the same instant as it was hashed may change again without changing its
// size or time (git's "racily clean" entries).
const RacyWindow = time.Second

// ErrSlowPath says the workspace needs capsule.BuildSnapshot.
var ErrSlowPath = errors.New("store: workspace needs the full snapshot walk")

// StatKey is what a rewrite of a file changes without reading it.
type StatKey struct {
	size  int64
	mtime int64 // UnixNano; 0 disables the cache (vfs.Mem has no times)
	mode  fs.FileMode
	ino   uint64
	ctime int64
}

type cachedFile struct {
	key  StatKey
	blob digest.Digest
	at   time.Time // when the file was hashed
}

// StatCache maps a workspace's slash paths to their last known digest,
// and remembers which blobs the capsule's store is known to hold. The zero
// value is empty; mu guards every field, and is taken last (no lock is
// taken while it is held).
type StatCache struct {
	mu     sync.Mutex
	dir    string // the workspace it describes
	files  map[string]cachedFile
	stored map[digest.Digest]bool
	hits   int // lookups answered from the cache; read with hitCount
}

// HitCount is the number of lookups the cache has answered. a caller
// looks up beside a freeze that reads the count for its log line, so the
// count is read under mu like every other field.
func (c *StatCache) HitCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

// IsStored reports whether blob d is known to be in the capsule's store.
func (c *StatCache) IsStored(d digest.Digest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stored[d]
}

// MarkStored notes that blob d is in the capsule's store.
func (c *StatCache) MarkStored(d digest.Digest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stored == nil {
		c.stored = map[digest.Digest]bool{}
	}
	c.stored[d] = true
}

// Forget empties the cache: the workspace or the capsule's blobs moved.
func (c *StatCache) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dir, c.files, c.stored = "", nil, nil
}

// Lookup returns the cached digest of rel if its stat is unchanged and it
// was not racily clean when hashed.
func (c *StatCache) Lookup(rel string, k StatKey) (digest.Digest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.files[rel]
	if !ok || k.mtime == 0 || e.key != k || time.Unix(0, k.mtime).After(e.at.Add(-RacyWindow)) {
		return "", false
	}
	c.hits++
	return e.blob, true
}

// Remember caches d as the digest of rel with stat k, hashed at time at. It
// does nothing on a forgotten cache.
func (c *StatCache) Remember(rel string, k StatKey, d digest.Digest, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files != nil {
		c.files[rel] = cachedFile{key: k, blob: d, at: at}
	}
}

// Describes reports whether the cache describes the folder dir.
func (c *StatCache) Describes(dir string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.files != nil && c.dir == dir
}

// Reset empties the cache if it describes another folder than dir.
func (c *StatCache) Reset(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir != dir || c.files == nil {
		c.dir, c.files, c.stored = dir, map[string]cachedFile{}, nil
	}
}

// KeyOf returns the stat key of fi.
func KeyOf(fi fs.FileInfo) StatKey {
	k := StatKey{size: fi.Size(), mode: fi.Mode()}
	if t := fi.ModTime(); !t.IsZero() {
		k.mtime = t.UnixNano()
	}
	k.ino, k.ctime = InodeOf(fi)
	return k
}
