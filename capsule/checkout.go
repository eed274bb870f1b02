package capsule

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/agentcapsule/capsule/internal/par"
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
func (c *Capsule) Checkout(dir string, cfg CheckoutConfig) (*SnapshotStats, error) {
	s, err := c.Snapshot()
	if err != nil {
		return nil, err
	}
	if cfg.FS == nil {
		cfg.FS = c.fsys
	}
	if err := CheckoutSnapshot(s, c.blobs, dir, cfg); err != nil {
		return nil, err
	}
	st := s.Stats()
	return &st, nil
}

// CheckoutSnapshot materialises s, reading blobs from store, into dir.
// See Capsule.Checkout.
func CheckoutSnapshot(s *Snapshot, store *BlobStore, dir string, cfg CheckoutConfig) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("checkout: %w", err)
	}
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
	co := &checkout{s: s, store: store, fsys: fsys, root: staging, cfg: cfg}
	if err := co.run(); err != nil {
		_ = fsys.RemoveAll(staging)
		return fmt.Errorf("checkout %s: %w", dir, err)
	}
	if err := moveInto(fsys, staging, dir); err != nil {
		_ = fsys.RemoveAll(staging)
		return fmt.Errorf("checkout %s: %w", dir, err)
	}
	return nil
}

type checkout struct {
	s     *Snapshot
	store *BlobStore
	fsys  vfs.FS
	root  string
	cfg   CheckoutConfig
}

func (co *checkout) run() error {
	dirs := co.dirs()
	for _, d := range dirs {
		if err := co.fsys.Mkdir(hostPath(co.root, d), 0o755); err != nil {
			return err
		}
	}
	if err := co.files(); err != nil {
		return err
	}
	for _, e := range co.s.Entries {
		if e.Type == TypeSymlink {
			if err := co.fsys.Symlink(filepath.FromSlash(e.Target), hostPath(co.root, e.Path)); err != nil {
				return err
			}
		}
	}
	if co.cfg.Durable {
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := co.fsys.SyncDir(hostPath(co.root, dirs[i])); err != nil {
				return err
			}
		}
	}
	return nil
}

// dirs returns every directory to create, parents first, the root included.
func (co *checkout) dirs() []string {
	set := map[string]bool{".": true}
	for _, e := range co.s.Entries {
		p := path.Dir(e.Path)
		if e.Type == TypeDir {
			p = e.Path
		}
		for ; p != "." && !set[p]; p = path.Dir(p) {
			set[p] = true
		}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		return depth(out[i]) < depth(out[j]) || depth(out[i]) == depth(out[j]) && out[i] < out[j]
	})
	return out
}

func depth(p string) int {
	if p == "." {
		return 0
	}
	n := 1
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			n++
		}
	}
	return n
}

// files writes every file entry on cfg.Workers goroutines.
func (co *checkout) files() error {
	var idx []int
	var total int64
	for i, e := range co.s.Entries {
		if e.Type == TypeFile {
			idx = append(idx, i)
			total += e.Size
		}
	}
	if st, ok := co.cfg.Progress.(interface{ SetTotal(int64) }); ok {
		st.SetTotal(total)
	}
	p := newLockedProgress(co.cfg.Progress)
	errs := make([]error, len(idx))
	par.Do(len(idx), workers(co.cfg.Workers), func(k int) {
		errs[k] = co.file(co.s.Entries[idx[k]], p)
	})
	return errors.Join(errs...)
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
