package store

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
	"time"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/par"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	ignore "github.com/sabhiram/go-gitignore"
)

// WorkRecord is a recorded workspace: the snapshot and, for each file
// entry, where its bytes are on the host.
type WorkRecord struct {
	Snap  *capsule.Snapshot
	Files map[digest.Digest]string // blob -> a workspace file holding it
}

// RecordWork records the workspace dir as capsule.BuildSnapshot would,
// hashing only files the cache cannot vouch for. It returns ErrSlowPath for
// a workspace with symbolic links or special files.
func RecordWork(fsys vfs.FS, dir string, cache *StatCache, now func() time.Time) (*WorkRecord, error) {
	cache.Reset(dir)
	w := &workWalker{fsys: fsys, root: dir}
	var err error
	if w.ign, err = readIgnoreFile(fsys, filepath.Join(dir, capsule.IgnoreFile)); err != nil {
		return nil, err
	}
	if err := w.walk(""); err != nil {
		return nil, err
	}
	rec := &WorkRecord{Files: map[digest.Digest]string{}}
	errs := make([]error, len(w.files))
	par.Do(len(w.files), 2, func(i int) {
		errs[i] = w.hash(&w.files[i], cache, now)
	})
	if err := errors.Join(errs...); err != nil {
		if errors.Is(err, ErrSlowPath) {
			return nil, ErrSlowPath
		}
		return nil, fmt.Errorf("record workspace: %w", err)
	}
	for _, f := range w.files {
		rec.Files[f.entry.Blob] = filepath.Join(dir, filepath.FromSlash(f.entry.Path))
	}
	// Valid by construction; Marshal validates it again before it is used.
	rec.Snap = &capsule.Snapshot{Version: capsule.SnapshotVersion, Entries: w.entries()}
	return rec, nil
}

// WalkedFile is a workspace file found by a walk, with its stat.
type WalkedFile struct {
	entry capsule.Entry
	key   StatKey
}

type workWalker struct {
	fsys  vfs.FS
	root  string
	ign   *ignore.GitIgnore
	files []WalkedFile
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

func (w *workWalker) walkDir(rel string) ([]WalkedFile, []string, error) {
	ents, err := vfs.ReadDirStat(w.fsys, filepath.Join(w.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, nil, fmt.Errorf("record workspace: %w", err)
	}
	var files []WalkedFile
	var dirs []string
	type sub struct {
		path  string
		files []WalkedFile
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
			files = append(files, WalkedFile{entry: e, key: KeyOf(fi)})
		default:
			err = ErrSlowPath
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
		if errors.Is(err, ErrSlowPath) {
			return nil, nil, ErrSlowPath
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
func (w *workWalker) hash(f *WalkedFile, cache *StatCache, now func() time.Time) error {
	if d, ok := cache.Lookup(f.entry.Path, f.key); ok {
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
		cache.Remember(f.entry.Path, f.key, f.entry.Blob, at)
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
		return nil, ErrSlowPath // let BuildSnapshot report it
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return ignore.CompileIgnoreLines(lines...), nil
}

// Rehash hashes files of the workspace dir again into cache, stopping
// early when stop reports true or the cache no longer describes dir. A
// file that went is simply not cached.
func Rehash(fsys vfs.FS, dir string, files []WalkedFile, cache *StatCache, now func() time.Time, stop func() bool) {
	w := &workWalker{fsys: fsys, root: dir}
	for i := range files {
		if stop() || !cache.Describes(dir) {
			return
		}
		_ = w.hash(&files[i], cache, now)
	}
}

// Seed records in the cache the digests of the files of the workspace dir
// a checkout of snap wrote (the blobs of the capsule's store), as known at
// time at. It returns the files the cache will not trust for that: those
// written within RacyWindow of at (Rehash them once it has passed).
func (c *StatCache) Seed(fsys vfs.FS, dir string, snap *capsule.Snapshot, at time.Time) []WalkedFile {
	c.Reset(dir)
	var racy []WalkedFile
	for _, e := range snap.Entries {
		if e.Type != capsule.TypeFile {
			continue
		}
		if fi, err := fsys.Lstat(filepath.Join(dir, filepath.FromSlash(e.Path))); err == nil && fi.Mode().IsRegular() && fi.Size() == e.Size {
			k := KeyOf(fi)
			c.Remember(e.Path, k, e.Blob, at)
			if k.mtime != 0 && !time.Unix(0, k.mtime).Before(at.Add(-RacyWindow)) {
				racy = append(racy, WalkedFile{entry: capsule.Entry{Path: e.Path, Type: capsule.TypeFile}, key: k})
			}
		}
		c.MarkStored(e.Blob)
	}
	return racy
}
