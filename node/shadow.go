package node

import (
	"encoding/json"
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

// The shadow is the next incoming move's staging, built while the agent
// still runs on the source: after each pre-copy push the target brings
// shadow/work to the workspace of the round's manifest (applying only what
// changed since the previous round, from its CAS store) and shadow/capsule
// to its layout files. The frozen window then renames the shadow into the
// move's staging and applies only the delta since the last round, instead
// of checking out the whole workspace. shadow.json says which manifest the
// shadow reflects and which layout files it holds; without it there is no
// shadow (it is removed before any change and written after the change is
// durable, so a crash leaves no half-built shadow that looks complete).
const (
	shadowDir  = "shadow"
	shadowFile = "shadow.json"
)

// shadowState is shadow.json.
type shadowState struct {
	Manifest digest.Digest            `json:"manifest"`
	Files    map[string]digest.Digest `json:"files"` // layout files in shadow/capsule, by path
}

// shadowSkeleton lists the capsule's layout directories a shadow holds
// (artifacts/blobs is the CAS store, renamed in by the move).
var shadowSkeleton = []string{"artifacts", "environment", "memory", "memory/vector_index"}

// loadShadow returns the shadow's state and the snapshot its workspace
// holds, or nil and an empty snapshot when there is no usable shadow (a
// leftover is removed).
func (a *agent) loadShadow() (*shadowState, *capsule.Snapshot) {
	if a.shadow != nil {
		return a.shadow.state, a.shadow.snap
	}
	fsys := a.n.fsys
	b, err := vfs.ReadFile(fsys, a.path(shadowFile))
	var st shadowState
	if err == nil && json.Unmarshal(b, &st) == nil && st.Files != nil {
		if snap, err := readSnapshotFile(fsys, filepath.Join(a.path(shadowDir, capsuleDir), filepath.FromSlash(manifest.SnapshotPath)), st.Files[manifest.SnapshotPath], nil); err == nil {
			a.shadow = &shadowMem{state: &st, snap: snap}
			return &st, snap
		}
	}
	a.dropShadow()
	return nil, capsule.NewSnapshot()
}

// shadowMem caches shadow.json and the snapshot it describes.
type shadowMem struct {
	state *shadowState
	snap  *capsule.Snapshot
	blobs map[digest.Digest]bool // what state and snap reference, built on first use
}

// dropShadow removes the shadow (it is cache).
func (a *agent) dropShadow() {
	a.shadow = nil
	_ = a.n.fsys.Remove(a.path(shadowFile))
	_ = a.n.fsys.RemoveAll(a.path(shadowDir))
}

// readSnapshotFile reads the snapshot.json at name, checks it hashes to
// want and parses it with parse (capsule.ParseSnapshot when nil).
func readSnapshotFile(fsys vfs.FS, name string, want digest.Digest, parse func(digest.Digest, []byte) (*capsule.Snapshot, error)) (*capsule.Snapshot, error) {
	b, err := vfs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	if digest.FromBytes(b) != want {
		return nil, fmt.Errorf("%s does not hash to %s", name, want.Short())
	}
	if parse == nil {
		return capsule.ParseSnapshot(b)
	}
	return parse(want, b)
}

// casManifest reads, checks and parses the manifest blob md of the CAS
// store (or of blobDir when not empty).
func (a *agent) casManifest(blobDir string, md digest.Digest) ([]byte, *manifest.Manifest, error) {
	if blobDir == "" {
		blobDir = a.cas().dir
	}
	mb, err := vfs.ReadFile(a.n.fsys, filepath.Join(blobDir, md.Hex()))
	if err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", md.Short(), err)
	}
	if digest.FromBytes(mb) != md {
		return nil, nil, fmt.Errorf("manifest: content does not hash to %s", md.Short())
	}
	m, err := manifest.Parse(mb)
	if err != nil {
		return nil, nil, err
	}
	if m.Agent.ID != a.id {
		return nil, nil, fmt.Errorf("manifest names agent %s, the move is of %s", m.Agent.ID, a.id)
	}
	return mb, m, nil
}

// updateShadow brings the shadow to the state of manifest md, whose blobs
// a pre-copy push just put in the CAS store. Caller holds a.mu.
func (a *agent) updateShadow(md digest.Digest) error {
	st, base := a.loadShadow()
	if st != nil && st.Manifest == md {
		return nil
	}
	mb, m, err := a.casManifest("", md)
	if err != nil {
		return err
	}
	sf, ok := m.File(manifest.SnapshotPath)
	if !ok {
		return errors.New("manifest lists no snapshot")
	}
	snap, err := readSnapshotFile(a.n.fsys, a.cas().path(sf.Digest), sf.Digest, nil)
	if err != nil {
		return err
	}
	if st == nil {
		st = &shadowState{Files: map[string]digest.Digest{}}
	} else {
		// Durably gone before any file of the shadow changes (some are
		// written over in place): a crash then never leaves a shadow.json
		// that describes files other than those on disk.
		if err := a.n.fsys.Remove(a.path(shadowFile)); err != nil {
			return err
		}
		if err := a.n.fsys.SyncDir(a.dir); err != nil {
			return err
		}
	}
	a.shadow = nil
	var b syncBatch
	b.dir(a.dir)
	if err := a.buildShadow(m, st, base, snap, &b); err != nil {
		a.dropShadow()
		return err
	}
	// The round's manifest.json too, only so that the staging writes the
	// frozen one over it in place instead of creating it (copyOver).
	mpath := filepath.Join(a.path(shadowDir, capsuleDir), manifest.FileName)
	if replaced, err := writeOver(a.n.fsys, mpath, mb, 0o644); err != nil {
		a.dropShadow()
		return err
	} else if !replaced {
		b.created(mpath)
	}
	b.file(mpath)
	if err := b.flush(a.n.fsys); err != nil {
		a.dropShadow()
		return err
	}
	st.Manifest = md
	data, _ := json.Marshal(st)
	if err := vfs.WriteFile(a.n.fsys, a.path(shadowFile), data, 0o600); err != nil {
		a.dropShadow()
		return err
	}
	a.shadow = &shadowMem{state: st, snap: snap}
	if a.inc != nil {
		warmRender(a.inc.events, a.n.hooks.render)
	}
	return nil
}

func (a *agent) buildShadow(m *manifest.Manifest, st *shadowState, base, snap *capsule.Snapshot, b *syncBatch) error {
	root := a.path(shadowDir)
	capDir := filepath.Join(root, capsuleDir)
	for _, d := range append([]string{root, capDir, filepath.Join(root, workDir)}, hostPaths(capDir, shadowSkeleton)...) {
		if err := mkdirNoted(a.n.fsys, d, b); err != nil {
			return err
		}
	}
	blobs := blobFolder{dir: a.cas().dir}
	if err := placeLayout(a.n.fsys, blobs, capDir, m, st.Files, b); err != nil {
		return err
	}
	return applyDelta(a.n.fsys, blobs, filepath.Join(root, workDir), base, snap, b)
}

// blobFolder is where blobs are read from: a folder of blobs named by hex
// digest, and optionally the fresh blobs of a prepare (not yet durable,
// verified by this process), which are taken first.
type blobFolder struct {
	dir   string
	fresh string          // folder of fresh blobs, or ""
	names map[string]bool // the hex names in fresh
}

func (f blobFolder) path(d digest.Digest) string {
	if f.names[d.Hex()] {
		return filepath.Join(f.fresh, d.Hex())
	}
	return filepath.Join(f.dir, d.Hex())
}

// placeLayout makes capDir hold m's layout files, copying from blobs those
// whose digest differs from have's (updated in place).
func placeLayout(fsys vfs.FS, blobs blobFolder, capDir string, m *manifest.Manifest, have map[string]digest.Digest, b *syncBatch) error {
	for _, f := range m.Files {
		if have[f.Path] == f.Digest {
			continue
		}
		dst := filepath.Join(capDir, filepath.FromSlash(f.Path))
		delete(have, f.Path)
		replaced, err := copyOver(fsys, blobs.path(f.Digest), dst, f.Digest, f.Size, 0o644, true)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		b.file(dst)
		if !replaced {
			b.created(dst)
		}
		have[f.Path] = f.Digest
	}
	return nil
}

// mkdirNoted creates dir if it is missing and notes its parent.
func mkdirNoted(fsys vfs.FS, dir string, b *syncBatch) error {
	if fi, err := fsys.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := fsys.Mkdir(dir, 0o755); err != nil {
		return err
	}
	b.created(dir)
	return nil
}

func hostPaths(root string, rels []string) []string {
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = filepath.Join(root, filepath.FromSlash(r))
	}
	return out
}

// applyDelta turns root, a checkout of from, into a checkout of to (as
// capsule.CheckoutSnapshot would have written it: same bytes, modes, empty
// directories and links), touching only what differs. File bytes come from
// blobs (a directory of blobs named by hex digest) and are verified as
// they are copied. Nothing is synced: every changed file and directory is
// noted in b.
func applyDelta(fsys vfs.FS, blobs blobFolder, root string, from, to *capsule.Snapshot, b *syncBatch) error {
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
			continue // written over below (copyOver replaces it when it cannot)
		}
		if err := fsys.Remove(host(e.Path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		b.created(host(e.Path))
	}
	for _, d := range sortedDirs(fromDirs, true) { // directories that go, deepest first
		if !toDirs[d] {
			if err := fsys.RemoveAll(host(d)); err != nil {
				return err
			}
			b.created(host(d))
		}
	}
	for _, d := range sortedDirs(toDirs, false) { // directories that come, parents first
		if !fromDirs[d] {
			if err := fsys.Mkdir(host(d), 0o755); err != nil {
				return err
			}
			b.created(host(d))
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
			b.created(host(e.Path))
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
		replaced[i], errs[i] = copyOver(fsys, blobs.path(e.Blob), host(e.Path), e.Blob, e.Size, perm, true)
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	for i, e := range files {
		b.file(host(e.Path))
		if !replaced[i] {
			b.created(host(e.Path))
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

// keepShadow makes the workspace of a retired agent, frozen at fw, the
// shadow of a later move back (one rename), so that such a move applies
// only what changed since instead of checking out the whole workspace.
// What a checkout of fw.snap would not hold is removed first (ignored
// files, entries the snapshot skips), modes are those a checkout writes,
// and every file is synced before shadow.json says the shadow is
// complete: the runner wrote the workspace without syncing it. The
// shadow's layout files are only snapshot.json; the others come from the
// CAS store when a move needs them. Caller holds a.mu.
func (a *agent) keepShadow(fw *frozenWork) error {
	fsys := a.n.fsys
	a.dropShadow()
	root := a.path(shadowDir)
	capDir := filepath.Join(root, capsuleDir)
	var b syncBatch
	b.dir(a.dir)
	if err := fsys.Mkdir(root, 0o755); err != nil {
		return err
	}
	work := filepath.Join(root, workDir)
	if err := fsys.Rename(a.work(), work); err != nil {
		return err
	}
	b.created(work)
	for _, d := range append([]string{capDir}, hostPaths(capDir, shadowSkeleton)...) {
		if err := mkdirNoted(fsys, d, &b); err != nil {
			return err
		}
	}
	sp := filepath.Join(capDir, filepath.FromSlash(manifest.SnapshotPath))
	if err := writeNew(fsys, sp, fw.snapBytes, 0o644); err != nil {
		return err
	}
	b.file(sp)
	b.created(sp)
	if err := pruneCheckout(fsys, work, fw.snap, &b); err != nil {
		return err
	}
	if err := b.flush(fsys); err != nil {
		return err
	}
	st := &shadowState{Manifest: fw.manifest, Files: map[string]digest.Digest{manifest.SnapshotPath: digest.FromBytes(fw.snapBytes)}}
	data, _ := json.Marshal(st)
	if err := vfs.WriteFile(fsys, a.path(shadowFile), data, 0o600); err != nil {
		return err
	}
	a.shadow = &shadowMem{state: st, snap: fw.snap}
	return nil
}

// pruneCheckout makes root, a folder holding at least the entries of snap,
// a checkout of snap as capsule.CheckoutSnapshot writes it: whatever snap
// does not list is removed and file modes become 0644 or 0755. Every file
// kept is noted in b for syncing; its bytes are not read (the caller
// recorded them as snap).
func pruneCheckout(fsys vfs.FS, root string, snap *capsule.Snapshot, b *syncBatch) error {
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
	b    *syncBatch
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
			p.b.dir(dir)
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
		p.b.file(host)
		return true, nil
	}
	return false, differs
}
