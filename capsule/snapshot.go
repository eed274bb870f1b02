package capsule

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	ignore "github.com/sabhiram/go-gitignore"
)

// IgnoreFile is the file at a workspace's root whose gitignore-syntax
// patterns name what a snapshot leaves out (FORMAT §5.3). It is recorded
// itself, like .gitignore.
const IgnoreFile = ".capsuleignore"

// maxIgnoreSize bounds .capsuleignore.
const maxIgnoreSize = 1 << 20

// SnapshotConfig says how to record a workspace.
type SnapshotConfig struct {
	// FS is the workspace's file system; nil means the capsule's.
	FS vfs.FS
	// Workers is how many files are hashed at once; 0 means one per CPU.
	Workers int
	// Progress receives the bytes read; if it also has SetTotal(int64),
	// it is told the total first.
	Progress Progress
	// Warn is told about every entry left out for a reason other than
	// .capsuleignore (a link that leaves the tree, a special file, a name
	// that is not UTF-8). Nil drops the warnings; they are also in the result.
	Warn func(path, reason string)
}

// Skipped is an entry a snapshot left out, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// SnapshotResult describes a recorded snapshot.
type SnapshotResult struct {
	SnapshotStats
	// NewBlobs and NewBytes count the blobs that were not in the store yet;
	// everything else was already there and was not copied again.
	NewBlobs int   `json:"new_blobs"`
	NewBytes int64 `json:"new_bytes"`
	// Ignored counts entries left out by .capsuleignore.
	Ignored int       `json:"ignored"`
	Skipped []Skipped `json:"skipped"`
}

// SnapshotFrom records the workspace tree in dir (FORMAT §5): regular files
// with their exec bit, empty directories, and relative symbolic links that
// stay inside the tree. It stores the blobs the capsule lacks, then commits
// the new artifacts/snapshot.json. Files are hashed in parallel and streamed,
// never held in memory.
func (c *Capsule) SnapshotFrom(dir string, cfg SnapshotConfig) (*SnapshotResult, error) {
	if err := checkHost(c.fsys, c.dir, "snapshot"); err != nil { // before a blob is written
		return nil, err
	}
	s, res, err := BuildSnapshot(dir, c.blobs, cfg, c.dir)
	if err != nil {
		return nil, err
	}
	if err := c.Commit(func(tx *Tx) error { return tx.SetSnapshot(s) }); err != nil {
		return nil, err
	}
	return res, nil
}

// BuildSnapshot records the workspace in dir into store, returning the
// snapshot without committing it anywhere. exclude, if not empty, is a
// directory left out of the walk (the capsule itself, when it lies inside
// the workspace).
func BuildSnapshot(dir string, store *BlobStore, cfg SnapshotConfig, exclude string) (*Snapshot, *SnapshotResult, error) {
	fsys := cfg.FS
	if fsys == nil {
		fsys = store.fsys
	}
	w, err := newWalker(fsys, dir, exclude, cfg.Warn)
	if err != nil {
		return nil, nil, err
	}
	if err := w.walk(""); err != nil {
		return nil, nil, err
	}
	w.dropEscapingLinks()
	res := &SnapshotResult{Ignored: w.ignored, Skipped: w.skipped}
	if err := w.record(store, cfg, res); err != nil {
		return nil, nil, err
	}
	s := &Snapshot{Version: SnapshotVersion, Entries: w.entries()}
	if err := s.Validate(); err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	res.SnapshotStats = s.Stats()
	return s, res, nil
}

// walker collects a workspace's entries.
type walker struct {
	fsys    vfs.FS
	root    string
	exclude string
	ign     *ignore.GitIgnore
	warn    func(string, string)

	files   []Entry
	dirs    []string // every directory walked
	links   map[string]string
	ignored int
	skipped []Skipped
}

func newWalker(fsys vfs.FS, root, exclude string, warn func(string, string)) (*walker, error) {
	fi, err := fsys.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("snapshot: %s is not a directory", root)
	}
	w := &walker{fsys: fsys, root: root, warn: warn, links: map[string]string{}}
	if exclude != "" {
		w.exclude = absClean(exclude)
	}
	if w.ign, err = readIgnore(fsys, filepath.Join(root, IgnoreFile)); err != nil {
		return nil, err
	}
	return w, nil
}

func absClean(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// readIgnore compiles the workspace's .capsuleignore, if any.
func readIgnore(fsys vfs.FS, name string) (*ignore.GitIgnore, error) {
	b, err := readLimited(fsys, name, maxIgnoreSize)
	if errors.Is(err, fs.ErrNotExist) {
		return ignore.CompileIgnoreLines(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return ignore.CompileIgnoreLines(lines...), nil
}

func (w *walker) skip(p, reason string) {
	w.skipped = append(w.skipped, Skipped{Path: p, Reason: reason})
	if w.warn != nil {
		w.warn(p, reason)
	}
}

// walk records the tree below rel.
func (w *walker) walk(rel string) error {
	host := hostPath(w.root, rel)
	ents, err := w.fsys.ReadDir(host)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	for _, e := range ents {
		p := path.Join(rel, e.Name())
		if err := manifest.ValidPath(p); err != nil {
			w.skip(p, "name cannot be recorded: "+err.Error())
			continue
		}
		if w.ignoredPath(p, e.IsDir()) {
			w.ignored++
			continue
		}
		if w.exclude != "" && absClean(hostPath(w.root, p)) == w.exclude {
			w.skip(p, "the capsule itself")
			continue
		}
		if err := w.entry(p, e); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) ignoredPath(p string, dir bool) bool {
	if dir {
		return w.ign.MatchesPath(p + "/")
	}
	return w.ign.MatchesPath(p)
}

// entry records one directory entry.
func (w *walker) entry(p string, e fs.DirEntry) error {
	switch t := e.Type(); {
	case t.IsDir():
		w.dirs = append(w.dirs, p)
		return w.walk(p)
	case t.IsRegular():
		fi, err := e.Info()
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		// Size is the walk's until the file is read (progress's total).
		w.files = append(w.files, Entry{Path: p, Type: TypeFile, Exec: fi.Mode()&0o111 != 0, Size: fi.Size()})
		return nil
	case t&fs.ModeSymlink != 0:
		return w.link(p)
	default:
		w.skip(p, "special file (device, socket or pipe)")
		return nil
	}
}

func (w *walker) link(p string) error {
	target, err := w.fsys.Readlink(hostPath(w.root, p))
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	target = filepath.ToSlash(target)
	switch {
	case strings.HasPrefix(target, "/"):
		w.skip(p, "symbolic link with an absolute target")
	case target == "" || strings.ContainsRune(target, 0) || !utf8.ValidString(target):
		w.skip(p, "symbolic link target cannot be recorded")
	default:
		w.links[p] = target
	}
	return nil
}

// dropEscapingLinks leaves out every link whose target leaves the tree,
// repeating because dropping one link changes how others resolve.
func (w *walker) dropEscapingLinks() {
	for changed := true; changed; {
		changed = false
		for _, p := range slices.Sorted(maps.Keys(w.links)) {
			if escapes(w.links, p) {
				delete(w.links, p)
				w.skip(p, "symbolic link whose target leaves the workspace")
				changed = true
			}
		}
	}
}

// entries returns every recorded entry sorted by path: the files, the
// links, and the directories with nothing recorded below them.
func (w *walker) entries() []Entry {
	out := append([]Entry{}, w.files...)
	for p, t := range w.links {
		out = append(out, Entry{Path: p, Type: TypeSymlink, Target: t})
	}
	parents := map[string]bool{}
	mark := func(p string) {
		for d := path.Dir(p); d != "." && !parents[d]; d = path.Dir(d) {
			parents[d] = true
		}
	}
	for _, e := range out {
		mark(e.Path)
	}
	for i := len(w.dirs) - 1; i >= 0; i-- { // children before their parents
		if d := w.dirs[i]; !parents[d] {
			out = append(out, Entry{Path: d, Type: TypeDir})
			mark(d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// copyBuffered copies src to dst with a pooled 1 MiB buffer.
func copyBuffered(dst io.Writer, src io.Reader) (int64, error) {
	buf := getBuf()
	defer putBuf(buf)
	return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *buf)
}
