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
// never held in memory, and so is snapshot.json: memory does not grow with
// the number of files.
func (c *Capsule) SnapshotFrom(dir string, cfg SnapshotConfig) (*SnapshotResult, error) {
	if err := checkHost(c.fsys, c.dir, "snapshot"); err != nil { // before a blob is written
		return nil, err
	}
	sink, err := newFileSink(c.fsys, c.path(manifest.SnapshotPath))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer sink.remove()
	res, err := recordTree(dir, c.blobs, cfg, c.dir, sink)
	if err != nil {
		return nil, err
	}
	if err := c.Commit(func(tx *Tx) error { return sink.stage(tx) }); err != nil {
		return nil, err
	}
	return res, nil
}

// BuildSnapshot records the workspace in dir into store, returning the
// snapshot without committing it anywhere. exclude, if not empty, is a
// directory left out of the walk (the capsule itself, when it lies inside
// the workspace).
func BuildSnapshot(dir string, store *BlobStore, cfg SnapshotConfig, exclude string) (*Snapshot, *SnapshotResult, error) {
	sink := &sliceSink{entries: []Entry{}}
	res, err := recordTree(dir, store, cfg, exclude, sink)
	if err != nil {
		return nil, nil, err
	}
	s := &Snapshot{Version: SnapshotVersion, Entries: sink.entries}
	if err := s.Validate(); err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	return s, res, nil
}

// recordTree records the workspace in dir into store, handing every entry
// to sink in path order.
func recordTree(dir string, store *BlobStore, cfg SnapshotConfig, exclude string, sink entrySink) (*SnapshotResult, error) {
	fsys := cfg.FS
	if fsys == nil {
		fsys = store.fsys
	}
	w, err := newWalker(fsys, dir, exclude, cfg.Warn)
	if err != nil {
		return nil, err
	}
	st, wantTotal := cfg.Progress.(interface{ SetTotal(int64) })
	if err := w.scan("", wantTotal); err != nil {
		return nil, err
	}
	w.dropEscapingLinks()
	w.findEmpty()
	if wantTotal {
		st.SetTotal(w.total)
	}
	res := &SnapshotResult{Ignored: w.ignored, Skipped: w.skipped}
	if err := w.record(store, cfg, res, sink); err != nil {
		return nil, err
	}
	return res, nil
}

// walker records a workspace in two passes: scan reads the tree's shape
// (links, empty directories, what is left out), then emit walks it again
// in the order of the snapshot's paths and streams every entry, hashing
// and storing the files on the way (snapshotstream.go). Neither pass
// holds an entry per file.
type walker struct {
	fsys    vfs.FS
	root    string
	exclude string // the slash path below root left out, or ""
	ign     *ignore.GitIgnore
	warn    func(string, string)

	links     map[string]string   // the links recorded, by path
	seenLinks map[string]bool     // every link the scan saw, recorded or not
	bare      map[string][]string // directories without files or directories: their links
	empty     map[string]bool     // directories recorded as empty
	total     int64               // the files' sizes, when the scan adds them up
	files     int                 // the files the scan saw
	ignored   int
	skipped   []Skipped
}

func newWalker(fsys vfs.FS, root, exclude string, warn func(string, string)) (*walker, error) {
	fi, err := fsys.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("snapshot: %s is not a directory", root)
	}
	w := &walker{fsys: fsys, root: root, warn: warn, links: map[string]string{},
		seenLinks: map[string]bool{}, bare: map[string][]string{}, empty: map[string]bool{}}
	if exclude != "" {
		w.exclude = excludedPath(root, exclude)
	}
	if w.ign, err = readIgnore(fsys, filepath.Join(root, IgnoreFile)); err != nil {
		return nil, err
	}
	return w, nil
}

// excludedPath returns the slash path of exclude relative to root when it
// lies strictly below root, else "" (nothing in the walk can be it). The
// walk then compares paths, where resolving each entry against the
// working directory cost two stat calls per entry.
func excludedPath(root, exclude string) string {
	rel, err := filepath.Rel(absClean(root), absClean(exclude))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return filepath.ToSlash(rel)
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

// children lists the entries of directory rel that a snapshot considers:
// valid names, not ignored, not the capsule itself. With note set (the
// scan), it counts the ignored ones and warns about the others.
func (w *walker) children(rel string, note bool) ([]fs.DirEntry, error) {
	ents, err := w.fsys.ReadDir(hostPath(w.root, rel))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	out := ents[:0]
	for _, e := range ents {
		p := path.Join(rel, e.Name())
		var reason string
		switch {
		case manifest.ValidPath(p) != nil:
			reason = "name cannot be recorded: " + manifest.ValidPath(p).Error()
		case w.ignoredPath(p, e.IsDir()):
			if note {
				w.ignored++
			}
			continue
		case p == w.exclude:
			reason = "the capsule itself"
		default:
			out = append(out, e)
			continue
		}
		if note {
			w.skip(p, reason)
		}
	}
	return out, nil
}

func (w *walker) ignoredPath(p string, dir bool) bool {
	if dir {
		return w.ign.MatchesPath(p + "/")
	}
	return w.ign.MatchesPath(p)
}

// scan is a snapshot's first pass over the tree below rel: it reads the
// links, warns about what is left out, adds up the files' sizes when
// total is set, and notes each directory that holds no file and no
// directory (it is recorded as empty unless it keeps a link). It
// remembers nothing per file.
func (w *walker) scan(rel string, total bool) error {
	ents, err := w.children(rel, true)
	if err != nil {
		return err
	}
	full := false // rel holds a file or a directory
	var links []string
	for _, e := range ents {
		p := path.Join(rel, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			full = true
			if err := w.scan(p, total); err != nil {
				return err
			}
		case t.IsRegular():
			full = true
			w.files++
			if total {
				if fi, err := e.Info(); err == nil {
					w.total += fi.Size()
				}
			}
		case t&fs.ModeSymlink != 0:
			if err := w.link(p); err != nil {
				return err
			}
			links = append(links, p)
		default:
			w.skip(p, "special file (device, socket or pipe)")
		}
	}
	if rel != "" && !full {
		w.bare[rel] = links
	}
	return nil
}

func (w *walker) link(p string) error {
	target, err := w.fsys.Readlink(hostPath(w.root, p))
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	target = filepath.ToSlash(target)
	w.seenLinks[p] = true
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

// findEmpty decides which of the bare directories the scan noted are
// recorded as empty: those that keep none of their links.
func (w *walker) findEmpty() {
	for d, links := range w.bare {
		if !slices.ContainsFunc(links, func(p string) bool { _, kept := w.links[p]; return kept }) {
			w.empty[d] = true
		}
	}
	w.bare = nil
}

// copyBuffered copies src to dst with a pooled 1 MiB buffer.
func copyBuffered(dst io.Writer, src io.Reader) (int64, error) {
	buf := getBuf()
	defer putBuf(buf)
	return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *buf)
}
