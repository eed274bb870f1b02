package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/par"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	ignore "github.com/sabhiram/go-gitignore"
)

// The source records the workspace at every pre-copy round and once more
// at the freeze. Hashing a large workspace each time would put O(workspace)
// work inside the frozen window, so the node keeps a stat cache: a file
// whose size, modification time, mode and inode are those it had when it
// was last hashed keeps its digest. recordWork produces exactly the
// snapshot capsule.BuildSnapshot would (snapcache_test.go checks it on
// random trees); a workspace holding what this fast path does not handle
// (symbolic links, special files) is recorded by capsule.BuildSnapshot.

// racyWindow is how old a file's modification time must be, relative to
// the moment it was hashed, for its digest to be reused: a file written in
// the same instant as it was hashed may change again without changing its
// size or time (git's "racily clean" entries).
const racyWindow = time.Second

// errSlowPath says the workspace needs capsule.BuildSnapshot.
var errSlowPath = errors.New("node: workspace needs the full snapshot walk")

// statKey is what a rewrite of a file changes without reading it.
type statKey struct {
	size  int64
	mtime int64 // UnixNano; 0 disables the cache (vfs.Mem has no times)
	mode  fs.FileMode
	ino   uint64
	ctime int64
}

type cachedFile struct {
	key  statKey
	blob digest.Digest
	at   time.Time // when the file was hashed
}

// statCache maps a workspace's slash paths to their last known digest,
// and remembers which blobs the capsule's store is known to hold.
type statCache struct {
	mu     sync.Mutex
	dir    string // the workspace it describes
	files  map[string]cachedFile
	stored map[digest.Digest]bool
	hits   int // lookups answered from the cache; read with hitCount
}

// hitCount is the number of lookups the cache has answered. rehashLater
// looks up beside a freeze that reads the count for its log line, so the
// count is read under mu like every other field.
func (c *statCache) hitCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

func (c *statCache) isStored(d digest.Digest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stored[d]
}

func (c *statCache) markStored(d digest.Digest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stored == nil {
		c.stored = map[digest.Digest]bool{}
	}
	c.stored[d] = true
}

// forget empties the cache: the workspace or the capsule's blobs moved.
func (c *statCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dir, c.files, c.stored = "", nil, nil
}

// lookup returns the cached digest of rel if its stat is unchanged and it
// was not racily clean when hashed.
func (c *statCache) lookup(rel string, k statKey) (digest.Digest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.files[rel]
	if !ok || k.mtime == 0 || e.key != k || time.Unix(0, k.mtime).After(e.at.Add(-racyWindow)) {
		return "", false
	}
	c.hits++
	return e.blob, true
}

// store caches d as the digest of rel with stat k, hashed at time at. It
// does nothing on a forgotten cache.
func (c *statCache) store(rel string, k statKey, d digest.Digest, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files != nil {
		c.files[rel] = cachedFile{key: k, blob: d, at: at}
	}
}

// describes reports whether the cache describes the folder dir.
func (c *statCache) describes(dir string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.files != nil && c.dir == dir
}

// reset empties the cache if it describes another folder than dir.
func (c *statCache) reset(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir != dir || c.files == nil {
		c.dir, c.files, c.stored = dir, map[string]cachedFile{}, nil
	}
}

func keyOf(fi fs.FileInfo) statKey {
	k := statKey{size: fi.Size(), mode: fi.Mode()}
	if t := fi.ModTime(); !t.IsZero() {
		k.mtime = t.UnixNano()
	}
	k.ino, k.ctime = inodeOf(fi)
	return k
}

// workRecord is a recorded workspace: the snapshot and, for each file
// entry, where its bytes are on the host.
type workRecord struct {
	snap  *capsule.Snapshot
	files map[digest.Digest]string // blob -> a workspace file holding it
}

// recordWork records the workspace dir as capsule.BuildSnapshot would,
// hashing only files the cache cannot vouch for. It returns errSlowPath for
// a workspace with symbolic links or special files.
func recordWork(fsys vfs.FS, dir string, cache *statCache, now func() time.Time) (*workRecord, error) {
	cache.reset(dir)
	w := &workWalker{fsys: fsys, root: dir}
	var err error
	if w.ign, err = readIgnoreFile(fsys, filepath.Join(dir, capsule.IgnoreFile)); err != nil {
		return nil, err
	}
	if err := w.walk(""); err != nil {
		return nil, err
	}
	rec := &workRecord{files: map[digest.Digest]string{}}
	errs := make([]error, len(w.files))
	par.Do(len(w.files), 2, func(i int) {
		errs[i] = w.hash(&w.files[i], cache, now)
	})
	if err := errors.Join(errs...); err != nil {
		if errors.Is(err, errSlowPath) {
			return nil, errSlowPath
		}
		return nil, fmt.Errorf("record workspace: %w", err)
	}
	for _, f := range w.files {
		rec.files[f.entry.Blob] = filepath.Join(dir, filepath.FromSlash(f.entry.Path))
	}
	// Valid by construction; Marshal validates it again before it is used.
	rec.snap = &capsule.Snapshot{Version: capsule.SnapshotVersion, Entries: w.entries()}
	return rec, nil
}

type walkedFile struct {
	entry capsule.Entry
	key   statKey
}

type workWalker struct {
	fsys  vfs.FS
	root  string
	ign   *ignore.GitIgnore
	files []walkedFile
	dirs  []string
	sem   chan struct{} // a token per walkDir running on its own goroutine
}

// walk records the directory rel and everything below it: each
// directory is listed with its entries' stats in one pass
// (vfs.ReadDirStat: on Linux an fstatat per entry, relative to the open
// directory), and subdirectories are walked concurrently while a worker
// is free (the stats are most of a large workspace's record). Directories
// come out parents first, in depth-first order (entries relies on it);
// files in no particular order (entries sorts).
func (w *workWalker) walk(rel string) error {
	w.sem = make(chan struct{}, walkWorkers-1)
	files, dirs, err := w.walkDir(rel)
	w.files, w.dirs = files, dirs
	return err
}

// walkWorkers bounds the directories listed at once.
const walkWorkers = 4

func (w *workWalker) walkDir(rel string) ([]walkedFile, []string, error) {
	ents, err := vfs.ReadDirStat(w.fsys, filepath.Join(w.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, nil, fmt.Errorf("record workspace: %w", err)
	}
	var files []walkedFile
	var dirs []string
	type sub struct {
		path  string
		files []walkedFile
		dirs  []string
		err   error
		done  chan struct{}
	}
	var subs []*sub
	for _, fi := range ents {
		p := path.Join(rel, fi.Name())
		if manifest.ValidPath(p) != nil {
			continue // BuildSnapshot skips it too, with a warning
		}
		if w.ignored(p, fi.IsDir()) {
			continue
		}
		switch m := fi.Mode(); {
		case m.IsDir():
			sb := &sub{path: p, done: make(chan struct{})}
			subs = append(subs, sb)
			select {
			case w.sem <- struct{}{}:
				go func() {
					defer func() { <-w.sem; close(sb.done) }()
					sb.files, sb.dirs, sb.err = w.walkDir(p)
				}()
			default:
				sb.files, sb.dirs, sb.err = w.walkDir(p)
				close(sb.done)
			}
		case m.IsRegular():
			e := capsule.Entry{Path: p, Type: capsule.TypeFile, Exec: m&0o111 != 0}
			files = append(files, walkedFile{entry: e, key: keyOf(fi)})
		default:
			err = errSlowPath
		}
		if err != nil {
			break
		}
	}
	errs := []error{err}
	for _, sb := range subs {
		<-sb.done
		files = append(files, sb.files...)
		dirs = append(append(dirs, sb.path), sb.dirs...)
		errs = append(errs, sb.err)
	}
	if err := errors.Join(errs...); err != nil {
		if errors.Is(err, errSlowPath) {
			return nil, nil, errSlowPath
		}
		return nil, nil, err
	}
	return files, dirs, nil
}

func (w *workWalker) ignored(p string, dir bool) bool {
	if dir {
		return w.ign.MatchesPath(p + "/")
	}
	return w.ign.MatchesPath(p)
}

// hash fills f's blob and size, from the cache when it can vouch for the
// file.
func (w *workWalker) hash(f *walkedFile, cache *statCache, now func() time.Time) error {
	if d, ok := cache.lookup(f.entry.Path, f.key); ok {
		f.entry.Blob, f.entry.Size = d, f.key.size
		return nil
	}
	at := now()
	file, err := w.fsys.Open(filepath.Join(w.root, filepath.FromSlash(f.entry.Path)))
	if err != nil {
		return err
	}
	defer file.Close()
	h := digest.NewHasher()
	n, err := io.Copy(h, file)
	if err != nil {
		return err
	}
	f.entry.Blob, f.entry.Size = h.Digest(), n
	if n == f.key.size {
		cache.store(f.entry.Path, f.key, f.entry.Blob, at)
	}
	return nil
}

// entries returns the files and the directories with nothing recorded
// below them, sorted by path (capsule.BuildSnapshot's rule).
func (w *workWalker) entries() []capsule.Entry {
	out := make([]capsule.Entry, 0, len(w.files))
	parents := map[string]bool{}
	mark := func(p string) {
		for d := path.Dir(p); d != "." && !parents[d]; d = path.Dir(d) {
			parents[d] = true
		}
	}
	for _, f := range w.files {
		out = append(out, f.entry)
		mark(f.entry.Path)
	}
	for i := len(w.dirs) - 1; i >= 0; i-- {
		if d := w.dirs[i]; !parents[d] {
			out = append(out, capsule.Entry{Path: d, Type: capsule.TypeDir})
			mark(d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// maxIgnoreFile bounds .capsuleignore, as package capsule does.
const maxIgnoreFile = 1 << 20

func readIgnoreFile(fsys vfs.FS, name string) (*ignore.GitIgnore, error) {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return ignore.CompileIgnoreLines(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("record workspace: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile+1))
	if err != nil {
		return nil, fmt.Errorf("record workspace: %w", err)
	}
	if len(b) > maxIgnoreFile {
		return nil, errSlowPath // let BuildSnapshot report it
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return ignore.CompileIgnoreLines(lines...), nil
}
