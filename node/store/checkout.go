package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/par"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// A checkout is a folder that holds what a snapshot lists, as
// capsule.CheckoutSnapshot writes it. The functions here bring a checkout
// from one snapshot to another touching only what differs, reading blob
// bytes from a Folder and verifying them as they are copied. They sync
// nothing: every change is noted in a Batch.

// Folder is where blobs are read from: a folder of blobs named by hex
// digest, and optionally a folder of fresh blobs (not yet durable, verified
// by this process: Pending.FinishUnsynced), which are taken first.
type Folder struct {
	Dir   string
	Fresh string          // folder of fresh blobs, or ""
	Names map[string]bool // the hex names in Fresh
}

// Path returns the file that holds blob d.
func (f Folder) Path(d digest.Digest) string {
	if f.Names[d.Hex()] {
		return filepath.Join(f.Fresh, d.Hex())
	}
	return filepath.Join(f.Dir, d.Hex())
}

// PlaceLayout makes capDir hold m's layout files, copying from blobs those
// whose digest differs from have's (updated in place).
func PlaceLayout(fsys vfs.FS, blobs Folder, capDir string, m *manifest.Manifest, have map[string]digest.Digest, b *Batch) error {
	for _, f := range m.Files {
		if have[f.Path] == f.Digest {
			continue
		}
		dst := filepath.Join(capDir, filepath.FromSlash(f.Path))
		delete(have, f.Path)
		replaced, err := CopyOver(fsys, blobs.Path(f.Digest), dst, f.Digest, f.Size, 0o644, true)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		b.File(dst)
		if !replaced {
			b.Created(dst)
		}
		have[f.Path] = f.Digest
	}
	return nil
}

// MkdirNoted creates dir if it is missing and notes its parent.
func MkdirNoted(fsys vfs.FS, dir string, b *Batch) error {
	if fi, err := fsys.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := fsys.Mkdir(dir, 0o755); err != nil {
		return err
	}
	b.Created(dir)
	return nil
}

// HostPaths joins each slash path of rels to root.
func HostPaths(root string, rels []string) []string {
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = filepath.Join(root, filepath.FromSlash(r))
	}
	return out
}

// Checkout turns root, a checkout of from, into a checkout of to (as
// capsule.CheckoutSnapshot would have written it: same bytes, modes, empty
// directories and links), touching only what differs. File bytes come from
// blobs (a directory of blobs named by hex digest) and are verified as
// they are copied. Nothing is synced: every changed file and directory is
// noted in b.
func Checkout(fsys vfs.FS, blobs Folder, root string, from, to *capsule.Snapshot, b *Batch) error {
	host := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	toIdx, fromIdx := entryIndex(to), entryIndex(from)
	toDirs, fromDirs := dirSet(to), dirSet(from)
	for _, e := range from.Entries { // files and links that go or change
		if e.Type == capsule.TypeDir {
			continue
		}
		t, ok := toIdx[e.Path]
		if ok && sameEntry(e, t) {
			continue
		}
		if ok && e.Type == capsule.TypeFile && t.Type == capsule.TypeFile {
			continue // written over below (CopyOver replaces it when it cannot)
		}
		if err := fsys.Remove(host(e.Path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		b.Created(host(e.Path))
	}
	for _, d := range sortedDirs(fromDirs, true) { // directories that go, deepest first
		if !toDirs[d] {
			if err := fsys.RemoveAll(host(d)); err != nil {
				return err
			}
			b.Created(host(d))
		}
	}
	for _, d := range sortedDirs(toDirs, false) { // directories that come, parents first
		if !fromDirs[d] {
			if err := fsys.Mkdir(host(d), 0o755); err != nil {
				return err
			}
			b.Created(host(d))
		}
	}
	var files []capsule.Entry
	for _, e := range to.Entries {
		if f, ok := fromIdx[e.Path]; ok && sameEntry(f, e) {
			continue
		}
		switch e.Type {
		case capsule.TypeFile:
			files = append(files, e)
		case capsule.TypeSymlink:
			if err := fsys.Symlink(filepath.FromSlash(e.Target), host(e.Path)); err != nil {
				return err
			}
			b.Created(host(e.Path))
		}
	}
	errs := make([]error, len(files))
	replaced := make([]bool, len(files))
	par.Do(len(files), 4, func(i int) {
		e := files[i]
		perm := fs.FileMode(0o644)
		if e.Exec {
			perm = 0o755
		}
		replaced[i], errs[i] = CopyOver(fsys, blobs.Path(e.Blob), host(e.Path), e.Blob, e.Size, perm, true)
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	for i, e := range files {
		b.File(host(e.Path))
		if !replaced[i] {
			b.Created(host(e.Path))
		}
	}
	return nil
}

func entryIndex(s *capsule.Snapshot) map[string]capsule.Entry {
	m := make(map[string]capsule.Entry, len(s.Entries))
	for _, e := range s.Entries {
		if e.Type != capsule.TypeDir {
			m[e.Path] = e
		}
	}
	return m
}

// sameEntry reports whether a checkout of f already is a checkout of t.
func sameEntry(f, t capsule.Entry) bool {
	if f.Type != t.Type {
		return false
	}
	switch f.Type {
	case capsule.TypeFile:
		return f.Blob == t.Blob && f.Exec == t.Exec && f.Size == t.Size
	case capsule.TypeSymlink:
		return f.Target == t.Target
	}
	return true
}

// dirSet returns every directory a checkout of s creates below its root:
// dir entries and the parents of every entry.
func dirSet(s *capsule.Snapshot) map[string]bool {
	set := map[string]bool{}
	for _, e := range s.Entries {
		p := path.Dir(e.Path)
		if e.Type == capsule.TypeDir {
			p = e.Path
		}
		for ; p != "." && !set[p]; p = path.Dir(p) {
			set[p] = true
		}
	}
	return set
}

// sortedDirs sorts directories parents first, or deepest first.
func sortedDirs(set map[string]bool, deepestFirst bool) []string {
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := pathDepth(out[i]), pathDepth(out[j])
		if di != dj {
			return di < dj != deepestFirst
		}
		return out[i] < out[j]
	})
	return out
}

func pathDepth(p string) int {
	n := 1
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			n++
		}
	}
	return n
}

// PruneCheckout makes root, a folder holding at least the entries of snap,
// a checkout of snap as capsule.CheckoutSnapshot writes it: whatever snap
// does not list is removed and file modes become 0644 or 0755. Every file
// kept is noted in b for syncing; its bytes are not read (the caller
// recorded them as snap).
func PruneCheckout(fsys vfs.FS, root string, snap *capsule.Snapshot, b *Batch) error {
	p := pruner{fsys: fsys, root: root, idx: entryIndex(snap), dirs: dirSet(snap), b: b}
	if err := p.prune(""); err != nil {
		return err
	}
	if p.kept != len(p.idx)+len(p.dirs) {
		return fmt.Errorf("%s holds %d of the %d entries of its snapshot", root, p.kept, len(p.idx)+len(p.dirs))
	}
	return nil
}

type pruner struct {
	fsys vfs.FS
	root string
	idx  map[string]capsule.Entry
	dirs map[string]bool
	b    *Batch
	kept int // entries of the snapshot found
}

func (p *pruner) prune(rel string) error {
	dir := filepath.Join(p.root, filepath.FromSlash(rel))
	ents, err := p.fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		r := path.Join(rel, e.Name())
		host := filepath.Join(dir, e.Name())
		keep, err := p.entry(r, host, e)
		if err != nil {
			return err
		}
		if !keep {
			if err := p.fsys.RemoveAll(host); err != nil {
				return err
			}
			p.b.Dir(dir)
		}
	}
	return nil
}

// entry reports whether the entry r (at host) belongs to the checkout,
// descending into directories that do. An entry the snapshot lists with
// another type, size or target is an error: the folder is not what the
// snapshot recorded.
func (p *pruner) entry(r, host string, e fs.DirEntry) (bool, error) {
	if e.IsDir() {
		if !p.dirs[r] {
			return false, nil
		}
		p.kept++
		return true, p.prune(r)
	}
	want, ok := p.idx[r]
	if !ok {
		return false, nil
	}
	differs := fmt.Errorf("%s differs from its snapshot entry", host)
	switch t := e.Type(); {
	case t&fs.ModeSymlink != 0:
		target, err := p.fsys.Readlink(host)
		if err != nil || want.Type != capsule.TypeSymlink || target != filepath.FromSlash(want.Target) {
			return false, differs
		}
		p.kept++
		return true, nil
	case t.IsRegular():
		fi, err := e.Info()
		if err != nil || want.Type != capsule.TypeFile || fi.Size() != want.Size {
			return false, differs
		}
		p.kept++
		perm := fs.FileMode(0o644)
		if want.Exec {
			perm = 0o755
		}
		if fi.Mode().Perm() != perm {
			if err := p.fsys.Chmod(host, perm); err != nil {
				return false, err
			}
		}
		p.b.File(host)
		return true, nil
	}
	return false, differs
}
