package capsule

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// CheckoutConfig says how to materialise a snapshot.
type CheckoutConfig struct {
	// FS is the target's file system; nil means the capsule's.
	FS vfs.FS
	// Workers is how many files are written at once; 0 means one per CPU.
	Workers int
	// Progress receives the bytes written; if it also has SetTotal(int64),
	// it is told the total first.
	Progress Progress
	// Durable fsyncs every file and directory before the checkout is
	// renamed into place. Without it a crash may leave an incomplete tree,
	// which a new checkout replaces.
	Durable bool
}

// Checkout materialises the capsule's snapshot in dir, which must not
// exist or be empty (FORMAT §5.4): files byte for byte with mode 0644 or,
// when recorded executable, 0755; empty directories; symbolic links. Every
// blob is verified while it is copied. The tree is built in a staging
// directory beside dir and renamed into place when complete.
//
// snapshot.json is read twice, entry by entry, never whole: once to check
// its digest against the manifest and validate it, once to write the tree
// (its digest checked again), so memory does not grow with the number of
// files. A snapshot.json not in the shape Marshal writes is parsed whole.
func (c *Capsule) Checkout(dir string, cfg CheckoutConfig) (*SnapshotStats, error) {
	if cfg.FS == nil {
		cfg.FS = c.fsys
	}
	want, ok := c.snapshotFile()
	if !ok {
		return nil, fmt.Errorf("capsule: %s is not a file of the manifest", manifest.SnapshotPath)
	}
	var st SnapshotStats
	err := c.scanSnapshot(want, func(e Entry) error { st.add(e); return nil })
	if errors.Is(err, errShape) {
		return c.checkoutParsed(dir, cfg)
	}
	if err != nil {
		return nil, err
	}
	each := func(fn func(Entry) error) error { return c.scanSnapshot(want, fn) }
	if err := checkoutEach(each, st.Bytes, c.blobs, dir, cfg); err != nil {
		return nil, err
	}
	return &st, nil
}

func (c *Capsule) snapshotFile() (manifest.File, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.File(manifest.SnapshotPath)
}

// checkoutParsed is Checkout of a snapshot.json parsed whole.
func (c *Capsule) checkoutParsed(dir string, cfg CheckoutConfig) (*SnapshotStats, error) {
	s, err := c.Snapshot()
	if err != nil {
		return nil, err
	}
	if err := CheckoutSnapshot(s, c.blobs, dir, cfg); err != nil {
		return nil, err
	}
	st := s.Stats()
	return &st, nil
}

// scanSnapshot streams snapshot.json through fn and then checks that its
// bytes are the ones the manifest lists, as ReadFile does.
func (c *Capsule) scanSnapshot(want manifest.File, fn func(Entry) error) error {
	f, err := c.fsys.Open(c.path(manifest.SnapshotPath))
	if err != nil {
		return err
	}
	defer f.Close()
	h := digest.NewHasher()
	r := io.TeeReader(io.LimitReader(f, MaxSnapshotSize+1), h)
	_, serr := streamSnapshot(r, fn)
	if serr != nil && !errors.Is(serr, ErrBadSnapshot) {
		return serr
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	if h.Size() > MaxSnapshotSize {
		return fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, manifest.SnapshotPath, MaxSnapshotSize)
	}
	if got := h.Digest(); got != want.Digest {
		return &DigestError{Path: manifest.SnapshotPath, Want: want.Digest, Got: got}
	}
	return serr
}

// add counts e into st.
func (st *SnapshotStats) add(e Entry) {
	switch e.Type {
	case TypeFile:
		st.Files++
		st.Bytes += e.Size
	case TypeDir:
		st.Dirs++
	case TypeSymlink:
		st.Symlinks++
	}
}

// CheckoutSnapshot materialises s, reading blobs from store, into dir.
// See Capsule.Checkout.
func CheckoutSnapshot(s *Snapshot, store *BlobStore, dir string, cfg CheckoutConfig) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("checkout: %w", err)
	}
	each := func(fn func(Entry) error) error {
		for _, e := range s.Entries {
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
	return checkoutEach(each, s.Stats().Bytes, store, dir, cfg)
}

// checkoutEach materialises the entries each yields, in sorted order and
// already validated, holding bytes in total, into dir.
func checkoutEach(each func(func(Entry) error) error, total int64, store *BlobStore, dir string, cfg CheckoutConfig) error {
	fsys := cfg.FS
	if fsys == nil {
		fsys = store.fsys
	}
	dir = filepath.Clean(dir)
	if err := checkEmptyTarget(fsys, dir); err != nil {
		return fmt.Errorf("checkout %s: %w", dir, err)
	}
	if err := vfs.MkdirAllDurable(fsys, filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("checkout %s: %w", dir, err)
	}
	staging, err := stagingName(dir, "checkout")
	if err != nil {
		return fmt.Errorf("checkout %s: %w", dir, err)
	}
	if st, ok := cfg.Progress.(interface{ SetTotal(int64) }); ok {
		st.SetTotal(total)
	}
	co := &checkout{store: store, fsys: fsys, root: staging, cfg: cfg, p: newLockedProgress(cfg.Progress)}
	if err := co.run(each); err != nil {
		_ = fsys.RemoveAll(staging)
		return fmt.Errorf("checkout %s: %w", dir, err)
	}
	if err := moveInto(fsys, staging, dir); err != nil {
		_ = fsys.RemoveAll(staging)
		return fmt.Errorf("checkout %s: %w", dir, err)
	}
	return nil
}

// checkout writes one tree. The entries arrive sorted, so the directories
// an entry needs are its ancestors, and every entry below a directory comes
// before any entry after it: open holds the directories made for the
// current entry, and nothing else of the tree is remembered but the
// directories (to sync them) and the links (made last).
type checkout struct {
	store *BlobStore
	fsys  vfs.FS
	root  string
	cfg   CheckoutConfig
	p     Progress

	open  []string // the directories made for the current entry, parents first
	dirs  []string // every directory made, in order, for Durable
	links []Entry

	mu   sync.Mutex
	errs []error
}

func (co *checkout) run(each func(func(Entry) error) error) error {
	if err := co.fsys.Mkdir(co.root, 0o755); err != nil {
		return err
	}
	jobs := make(chan Entry, 64)
	var wg sync.WaitGroup
	for range workers(co.cfg.Workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range jobs {
				if err := co.file(e, co.p); err != nil {
					co.fail(err)
				}
			}
		}()
	}
	err := each(func(e Entry) error { return co.entry(e, jobs) })
	close(jobs)
	wg.Wait()
	if err != nil {
		return err
	}
	if err := co.err(); err != nil {
		return err
	}
	return co.finish()
}

func (co *checkout) fail(err error) {
	co.mu.Lock()
	co.errs = append(co.errs, err)
	co.mu.Unlock()
}

func (co *checkout) err() error {
	co.mu.Lock()
	defer co.mu.Unlock()
	return errors.Join(co.errs...)
}

// entry makes the directories e needs and hands a file to the writers.
func (co *checkout) entry(e Entry, jobs chan<- Entry) error {
	if err := co.err(); err != nil {
		return err // a writer failed: stop reading
	}
	need := path.Dir(e.Path)
	if e.Type == TypeDir {
		need = e.Path
	}
	if err := co.makeDirs(need); err != nil {
		return err
	}
	switch e.Type {
	case TypeFile:
		jobs <- e
	case TypeSymlink:
		co.links = append(co.links, e)
	}
	return nil
}

// makeDirs makes d and its missing parents, forgetting the open
// directories that are not d's ancestors.
func (co *checkout) makeDirs(d string) error {
	for len(co.open) > 0 {
		top := co.open[len(co.open)-1]
		if d == top || strings.HasPrefix(d, top+"/") {
			break
		}
		co.open = co.open[:len(co.open)-1]
	}
	if d == "." {
		co.open = co.open[:0]
		return nil
	}
	from := 0
	if n := len(co.open); n > 0 {
		from = len(co.open[n-1]) + 1
	}
	for i := from; i <= len(d); i++ {
		if i < len(d) && d[i] != '/' {
			continue
		}
		p := d[:i]
		if err := co.mkdir(p); err != nil {
			return err
		}
		co.open = append(co.open, p)
	}
	return nil
}

// mkdir makes one directory; it may exist already when an empty-directory
// entry shares its name with the parent of later entries.
func (co *checkout) mkdir(p string) error {
	name := hostPath(co.root, p)
	err := co.fsys.Mkdir(name, 0o755)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := co.fsys.Lstat(name); serr == nil && fi.IsDir() {
			return nil
		}
	}
	if err != nil {
		return err
	}
	co.dirs = append(co.dirs, p)
	return nil
}

// finish makes the links and, for Durable, syncs every directory, the
// deepest first and the root last.
func (co *checkout) finish() error {
	for _, e := range co.links {
		if err := co.fsys.Symlink(filepath.FromSlash(e.Target), hostPath(co.root, e.Path)); err != nil {
			return err
		}
	}
	if !co.cfg.Durable {
		return nil
	}
	for i := len(co.dirs) - 1; i >= 0; i-- {
		if err := co.fsys.SyncDir(hostPath(co.root, co.dirs[i])); err != nil {
			return err
		}
	}
	return co.fsys.SyncDir(co.root)
}

// file writes one file from its blob, verifying the blob as it streams.
func (co *checkout) file(e Entry, p Progress) error {
	perm := fs.FileMode(0o644)
	if e.Exec {
		perm = 0o755
	}
	src, err := co.store.Open(e.Blob)
	if err != nil {
		return fmt.Errorf("%s: %w", e.Path, err)
	}
	defer src.Close()
	name := hostPath(co.root, e.Path)
	dst, err := co.fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	n, err := copyBuffered(writerOnly{dst, p}, src)
	if err == nil && n != e.Size {
		err = fmt.Errorf("%w: blob %s has %d bytes, the snapshot says %d", ErrCorrupt, e.Blob.Short(), n, e.Size)
	}
	if err == nil && co.cfg.Durable {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = co.fsys.Chmod(name, perm) // exact mode, whatever the umask
	}
	if err != nil {
		return fmt.Errorf("%s: %w", e.Path, err)
	}
	return nil
}

// writerOnly counts progress as it writes.
type writerOnly struct {
	f interface{ Write([]byte) (int, error) }
	p Progress
}

func (w writerOnly) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if w.p != nil {
		w.p.Add(int64(n))
	}
	return n, err
}
