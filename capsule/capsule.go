// Package capsule owns the capsule folder: creating one (Init), opening it
// (Open, which first completes or rolls back an interrupted commit),
// changing it atomically (Commit: blobs, then the journal, then the other
// files, then the manifest last), its content-addressed blob store,
// recording a workspace into it and checking it out again, verifying every
// byte offline (Verify), describing it (Inspect) and installing a folder
// received into a staging directory (Install). The format is docs/FORMAT.md
// §1-6; tests cite its sections.
//
// Every file access goes through a vfs.FS, so the crash tests run on vfs.Mem.
// The command line, the node daemon and the archive code import this
// package; it imports only the pure packages, vfs and envspec.
package capsule

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// Sentinel errors callers branch on.
var (
	// ErrNotCapsule marks a directory without a readable manifest.json.
	ErrNotCapsule = errors.New("capsule: not a capsule")
	// ErrExists marks an Init or Install target that is already in use.
	ErrExists = errors.New("capsule: target exists and is not empty")
	// ErrConflict marks a commit that lost a race: the manifest on disk is
	// no longer the one this Capsule read.
	ErrConflict = errors.New("capsule: changed by another writer")
	// ErrCorrupt marks bytes that do not match their digest.
	ErrCorrupt = errors.New("capsule: corrupt data")
	// ErrMissingBlob marks a reference to a blob the store does not hold.
	ErrMissingBlob = errors.New("capsule: missing blob")
	// ErrTooLarge marks a file over its size limit.
	ErrTooLarge = errors.New("capsule: file too large")
)

// DigestError is data whose content does not hash to the digest it should.
type DigestError struct {
	Path      string
	Want, Got digest.Digest
}

// Error names the file and both digests.
func (e *DigestError) Error() string {
	return fmt.Sprintf("capsule: %s: content hashes to %s, want %s", e.Path, e.Got.Short(), e.Want.Short())
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *DigestError) Unwrap() error { return ErrCorrupt }

// Size limits on the files a capsule reads whole (FORMAT §3).
const (
	MaxSnapshotSize = 256 << 20
	MaxWorkingSize  = 64 << 20
)

// Progress receives the number of bytes processed as work goes on. A
// progress bar (package progress) satisfies it; nil means no progress.
type Progress interface{ Add(n int64) }

// Config holds what every writer of a capsule needs. The zero value is
// usable: it records release schema.Release with commit "unknown" and uses
// the system clock.
type Config struct {
	// Writer names this build in every commit.
	Writer manifest.Writer
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

func (c Config) writer() manifest.Writer {
	w := c.Writer
	if w.Release == "" {
		w.Release = schema.Release
	}
	if w.Commit == "" {
		w.Commit = "unknown"
	}
	return w
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Capsule is an open capsule folder. Its methods are safe for concurrent
// use; commits are serialised. Inside a commit's function the read methods
// (Manifest, Snapshot, ...) see the last committed state.
type Capsule struct {
	fsys  vfs.FS
	dir   string
	cfg   Config
	blobs *BlobStore

	lock    *dirLock   // shared by every Capsule of this folder in the process
	mu      sync.Mutex // guards m and mdigest; never held while calling out
	m       *manifest.Manifest
	mdigest digest.Digest // of the manifest bytes this Capsule read or wrote
}

// Open opens the capsule in dir. It first recovers from a crash (FORMAT
// §4.3): an interrupted commit that reached its commit point is completed,
// one that did not is rolled back, and temporary files are removed. It
// refuses a manifest that does not parse or lists a schema version this
// release cannot read (a *RefusedError), and it does so before recovery
// writes anything (FORMAT §11.4). It does not migrate an older capsule:
// Migrate does, and the read paths that write (import, checkout) call it. Within one process a folder may be opened any
// number of times: recovery waits for blob writes and commits in progress
// through other Capsule values of the same folder. Only one process may
// write a capsule at a time.
func Open(fsys vfs.FS, dir string, cfg Config) (*Capsule, error) {
	if err := CheckReadable(fsys, dir); err != nil && !errors.Is(err, ErrNotCapsule) {
		return nil, fmt.Errorf("open %s: %w", dir, err) // before recovery: a refusal writes nothing
	}
	lock := lockFor(dir)
	lock.rw.Lock()
	err := recoverDir(fsys, dir)
	lock.rw.Unlock()
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	blobs := &BlobStore{fsys: fsys, dir: hostPath(dir, manifest.BlobsDir), lock: &lock.rw}
	c := &Capsule{fsys: fsys, dir: dir, cfg: cfg, blobs: blobs, lock: lock}
	m, d, err := readManifest(fsys, filepath.Join(dir, manifest.FileName))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if err := m.CheckVersions(); err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	c.m, c.mdigest = m, d
	return c, nil
}

// readManifest reads and parses a manifest file, returning also the digest
// of its bytes.
func readManifest(fsys vfs.FS, name string) (*manifest.Manifest, digest.Digest, error) {
	b, err := readLimited(fsys, name, manifest.MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("%w: no %s", ErrNotCapsule, manifest.FileName)
	}
	if err != nil {
		return nil, "", err
	}
	m, err := manifest.Parse(b)
	if err != nil {
		return nil, "", err
	}
	return m, digest.FromBytes(b), nil
}

// readLimited reads a whole file, refusing one larger than limit.
func readLimited(fsys vfs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, name, limit)
	}
	return b, nil
}

// Dir returns the capsule's directory.
func (c *Capsule) Dir() string { return c.dir }

// FS returns the file system the capsule lives on.
func (c *Capsule) FS() vfs.FS { return c.fsys }

// Manifest returns a copy of the committed manifest.
func (c *Capsule) Manifest() *manifest.Manifest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.Clone()
}

// ID returns the agent's ID.
func (c *Capsule) ID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.Agent.ID
}

// Holder returns the committed holder record.
func (c *Capsule) Holder() manifest.Holder {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.Holder
}

// Blobs returns the capsule's blob store (artifacts/blobs).
func (c *Capsule) Blobs() *BlobStore { return c.blobs }

// PutBlob stores the bytes of r as a blob, durably, and returns its digest
// and size. A blob already present is kept as it is.
func (c *Capsule) PutBlob(r io.Reader) (digest.Digest, int64, error) { return c.blobs.Put(r) }

// OpenBlob opens blob d with a reader that fails at the end if the bytes do
// not hash to d.
func (c *Capsule) OpenBlob(d digest.Digest) (io.ReadCloser, error) { return c.blobs.Open(d) }

// HasBlob reports whether blob d is present.
func (c *Capsule) HasBlob(d digest.Digest) (bool, error) { return c.blobs.Has(d) }

// path returns the host path of a capsule-relative slash path.
func (c *Capsule) path(rel string) string { return hostPath(c.dir, rel) }

func hostPath(dir, rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }

// ReadFile reads a layout file whole (working memory, index, snapshot or
// environment), up to limit bytes, and checks it against the manifest.
func (c *Capsule) ReadFile(rel string, limit int64) ([]byte, error) {
	c.mu.Lock()
	want, ok := c.m.File(rel)
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("capsule: %s is not a file of the manifest", rel)
	}
	b, err := readLimited(c.fsys, c.path(rel), limit)
	if err != nil {
		return nil, err
	}
	if got := digest.FromBytes(b); got != want.Digest {
		return nil, &DigestError{Path: rel, Want: want.Digest, Got: got}
	}
	return b, nil
}

// WorkingMemory returns memory/working_memory.md.
func (c *Capsule) WorkingMemory() ([]byte, error) {
	return c.ReadFile(manifest.WorkingMemoryPath, MaxWorkingSize)
}

// Environment returns the parsed environment/spec.json.
func (c *Capsule) Environment() (*envspec.Spec, error) {
	b, err := c.ReadFile(manifest.EnvironmentPath, envspec.MaxSize)
	if err != nil {
		return nil, err
	}
	return envspec.Parse(b)
}

// Snapshot returns the parsed artifacts/snapshot.json.
func (c *Capsule) Snapshot() (*Snapshot, error) {
	b, err := c.ReadFile(manifest.SnapshotPath, MaxSnapshotSize)
	if err != nil {
		return nil, err
	}
	return ParseSnapshot(b)
}

// isTemp reports whether a base name is a temporary file of an atomic write.
func isTemp(base string) bool { return strings.HasPrefix(base, vfs.TempPrefix) }

// layoutDirs are the directories of the layout, parents first.
var layoutDirs = []string{"artifacts", manifest.BlobsDir, "environment", "memory", "memory/vector_index"}

// PruneBlobs removes the blobs that the committed snapshot does not
// reference and keep does not claim (keep may be nil), and returns how many
// it removed and their bytes. Blobs are never removed by a commit: a new
// snapshot leaves the old one's blobs unreferenced (a warning, FORMAT
// §3.2) until pruned. Pass in keep the blobs that journal attachments or a
// move in progress still need.
func (c *Capsule) PruneBlobs(keep func(digest.Digest) bool) (int, int64, error) {
	if err := checkHost(c.fsys, c.dir, "prune"); err != nil {
		return 0, 0, err
	}
	c.lock.commit.Lock()
	defer c.lock.commit.Unlock()
	c.lock.rw.RLock()
	defer c.lock.rw.RUnlock()
	s, err := c.Snapshot()
	if err != nil {
		return 0, 0, err
	}
	refs := s.Blobs()
	for d, n := range originalBlobs(c.Manifest()) { // FORMAT §11.5: never pruned
		refs[d] = n
	}
	all, err := c.blobs.List()
	if err != nil {
		return 0, 0, err
	}
	var n int
	var bytes int64
	for _, b := range all {
		if _, ok := refs[b.Digest]; ok || keep != nil && keep(b.Digest) {
			continue
		}
		if err := c.blobs.Remove(b.Digest); err != nil {
			return n, bytes, err
		}
		n++
		bytes += b.Size
	}
	return n, bytes, nil
}
