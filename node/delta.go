package node

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/agentcapsule/capsule/node/store"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// What travels on the wire besides the blobs a move must copy is kept
// small two ways (docs/PROTOCOL.md §4, §4a):
//
//   - Inventory by manifest. have, offer and prepare travel as the message
//     frame of a push stream that first carries the manifest and
//     snapshot.json the target lacks, marked api.InventoryManifest and
//     without their blob list: the target rebuilds the list from its store
//     (manifestInventory) exactly as the source built it (inventoryLocked,
//     frozenInventory), or refuses.
//   - Delta frames. A snapshot.json or manifest.json the target may hold
//     an older version of travels as zstd with that version as a raw
//     dictionary (api.FrameDelta). Each node keeps the few newest such
//     files of each agent in memory (wireState) to encode against.

// Errors of delta frames.
var (
	// ErrNoBase is returned for a delta frame whose base the receiver does
	// not hold.
	ErrNoBase = errors.New("node: delta base not held")
	// ErrBadDelta is returned for a delta frame that does not decode to
	// the blob its header announces.
	ErrBadDelta = store.ErrBadDelta
)

// maxDeltaBlob bounds the blobs sent as delta frames, and what a delta
// frame may declare or decode to: a delta is decoded in memory.
const maxDeltaBlob = store.MaxDeltaBlob

// maxFileDelta bounds the workspace files a source sends as deltas of an
// earlier version: both versions are read into memory and compressed.
const maxFileDelta = 8 << 20

// maxFrozenFileDelta is maxFileDelta inside the frozen window, where the
// time to compress (about 10 ms per MiB when the file was rewritten and
// the delta is thrown away) would lengthen the window: larger files travel
// whole there.
const maxFrozenFileDelta = 256 << 10

// minFrozenDelta is the smallest blob sent as a delta inside the frozen
// window: setting up a zstd encoder with a dictionary takes about half a
// millisecond, more than sending a few KiB whole.
const minFrozenDelta = 4 << 10

// maxBases is how many recent layout files per kind a node keeps per
// agent as delta bases.
const maxBases = 3

// baseKind says which layout file a base is; deltas pair like with like.
type baseKind uint8

const (
	baseSnapshot baseKind = iota + 1
	baseManifest
	baseFile // a workspace file, whose base is its version in an earlier inventory
)

// base is one recent layout file kept in memory.
type base struct {
	kind baseKind
	d    digest.Digest
	data []byte
	// from is the node that sent it to this one (when it was staged by an
	// incoming move): that node kept it, as its shadow's snapshot.
	from ID
}

// wireState is an agent's in-memory delta bases and the inventory it last
// derived from a manifest. The zero value is ready; it has its own lock.
type wireState struct {
	mu      sync.Mutex
	bases   []base // oldest first
	derived digest.Digest
	blobs   []transfer.Blob // the layout inventory of derived (attachments are added per call)
	events  int             // events of the journal derived commits
	off     bool            // send no delta frames (tests compare with and without)
}

// remember keeps data (which hashes to d) as a base of its kind.
func (w *wireState) remember(kind baseKind, d digest.Digest, data []byte, from ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bases = slices.DeleteFunc(w.bases, func(b base) bool { return b.d == d })
	w.bases = append(w.bases, base{kind: kind, d: d, data: data, from: from})
	n := 0
	for i := len(w.bases) - 1; i >= 0; i-- {
		if w.bases[i].kind == kind {
			if n++; n > maxBases {
				w.bases = slices.Delete(w.bases, i, i+1)
			}
		}
	}
}

// bytes returns the bytes of base d, if kept.
func (w *wireState) bytes(d digest.Digest) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bases {
		if b.d == d {
			return b.data, true
		}
	}
	return nil, false
}

// pick returns the newest base of kind that the peer to holds (known says
// which digests it does), or failing that, when guess, one the peer sent
// this node, which it probably kept; guessed says which. ok is false when
// there is none.
func (w *wireState) pick(kind baseKind, self digest.Digest, to ID, guess bool, known func(digest.Digest) bool, refused func(digest.Digest) bool) (b base, guessed, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.bases) - 1; i >= 0; i-- {
		c := w.bases[i]
		if c.kind == kind && c.d != self && known(c.d) && !refused(c.d) {
			return c, false, true
		}
	}
	for i := len(w.bases) - 1; guess && i >= 0; i-- {
		c := w.bases[i]
		if c.kind == kind && c.d != self && c.from == to && !refused(c.d) {
			return c, true, true
		}
	}
	return base{}, false, false
}

// decodeDelta decodes a delta frame's compressed bytes z with base and
// checks the result is the blob f announces (size and digest).
func decodeDelta(f api.Frame, base, z []byte) ([]byte, error) {
	return store.DecodeDelta(f.Digest, f.BlobSize, base, z)
}

// deltaFrame returns the frame and body that carry data (blob d) as a
// delta against b.
func deltaFrame(d digest.Digest, data []byte, b base) (api.Frame, []byte, error) {
	z, err := store.EncodeDelta(b.data, data)
	if err != nil {
		return api.Frame{}, nil, err
	}
	return api.Frame{Kind: api.FrameDelta, Digest: d, BlobSize: int64(len(data)), Base: b.d, Size: int64(len(z))}, z, nil
}

// receiveDelta decodes a delta frame with the base this node holds (its
// CAS store, its shadow, or its delta bases) and hands the verified blob
// to the CAS store; nothing is stored when any check fails. It returns
// the pending blob, nil if the store had it.
func (a *tenant) receiveDelta(f api.Frame, r io.Reader) (*store.Pending, error) {
	if f.BlobSize > maxDeltaBlob || f.Size > maxDeltaBlob {
		return nil, fmt.Errorf("%w: %s: %d bytes, limit %d", ErrBadDelta, f.Digest.Short(), max(f.BlobSize, f.Size), maxDeltaBlob)
	}
	z, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	b, err := a.deltaBase(f.Base)
	if err != nil {
		return nil, err
	}
	data, err := decodeDelta(f, b, z)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, snapshotPrefix) {
		a.tgt.snapPre.start(f.Digest, data) // the offer's inventory needs it parsed
	}
	pb, _, err := a.cas().Write(f.Digest, bytes.NewReader(data))
	return pb, err
}

// snapshotPrefix is how snapshot.json begins as capsule.Snapshot.Marshal
// writes it.
var snapshotPrefix = []byte(`{"version": `)

// deltaBase returns the verified bytes of blob d to decode a delta with.
func (a *tenant) deltaBase(d digest.Digest) ([]byte, error) {
	if b, ok := a.wire.bytes(d); ok {
		return b, nil
	}
	paths := []string{a.cas().Path(d)}
	a.mu.Lock()
	if a.tgt.in != nil { // a retried prepare: the store is the staging's blob folder
		paths = append(paths, filepath.Join(a.tgt.in.blobs(), d.Hex()))
	}
	if st, _ := a.loadShadow(); st != nil && st.Files[manifest.SnapshotPath] == d {
		paths = append(paths, filepath.Join(a.path(shadowDir, capsuleDir), filepath.FromSlash(manifest.SnapshotPath)))
	}
	a.mu.Unlock()
	for _, p := range paths {
		if b, ok := readSmall(a.n.fsys, p, d); ok {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNoBase, d.Short())
}

// readSmall reads the file at p if it is at most maxDeltaBlob bytes and
// hashes to d.
func readSmall(fsys vfs.FS, p string, d digest.Digest) ([]byte, bool) {
	if fi, err := fsys.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxDeltaBlob {
		return nil, false
	}
	b, err := vfs.ReadFile(fsys, p)
	return b, err == nil && digest.FromBytes(b) == d
}

// manifestInventory rebuilds the inventory of a request marked
// api.InventoryManifest from the manifest it names: the manifest, each
// layout file it lists and each blob its snapshot.json references, in the
// order inventoryLocked lists them. Both files are read from the CAS store
// (or the move's staging, once the store became it) and checked against
// their digests; it fails, never guesses, when either is missing. Caller
// holds a.mu.
func (a *tenant) manifestInventory(m transfer.Message) ([]transfer.Blob, error) {
	if m.Manifest == "" {
		return nil, errors.New("inventory by manifest: the message names no manifest")
	}
	a.wire.mu.Lock()
	if a.wire.derived == m.Manifest {
		blobs, events := a.wire.blobs, a.wire.events
		a.wire.mu.Unlock()
		return a.withAttachments(blobs, events)
	}
	a.wire.mu.Unlock()
	dirs := []string{a.cas().Dir, a.path(freshDir), a.staging(m.Move, capsuleDir, filepath.FromSlash(manifest.BlobsDir)), a.staging(m.Move, freshDir)}
	mb, err := readBlobIn(a.n.fsys, dirs, m.Manifest)
	if err != nil {
		return nil, fmt.Errorf("inventory by manifest: %w", err)
	}
	mf, err := manifest.Parse(mb)
	if err != nil {
		return nil, fmt.Errorf("inventory by manifest: %w", err)
	}
	if mf.Agent.ID != a.id {
		return nil, fmt.Errorf("inventory by manifest: manifest names agent %s, not %s", mf.Agent.ID, a.id)
	}
	sf, ok := mf.File(manifest.SnapshotPath)
	if !ok {
		return nil, errors.New("inventory by manifest: the manifest lists no snapshot")
	}
	sb, err := readBlobIn(a.n.fsys, dirs, sf.Digest)
	if err != nil {
		return nil, fmt.Errorf("inventory by manifest: snapshot: %w", err)
	}
	snap, err := a.parseSnapshot(sf.Digest, sb)
	if err != nil {
		return nil, fmt.Errorf("inventory by manifest: %w", err)
	}
	blobs := layoutInventory(m.Manifest, int64(len(mb)), mf, snap)
	a.wire.mu.Lock()
	a.wire.derived, a.wire.blobs, a.wire.events = m.Manifest, blobs, int(mf.Journal.Events)
	a.wire.mu.Unlock()
	return a.withAttachments(blobs, int(mf.Journal.Events))
}

// withAttachments appends to a manifest's layout inventory the blobs the
// attachments of its journal name, as far as this node's journal copy
// holds that journal (the first events of it; a copy that lags lists
// fewer, and the move's verify refuses a staging whose journal names a
// blob it lacks). Caller holds a.mu.
func (a *tenant) withAttachments(blobs []transfer.Blob, events int) ([]transfer.Blob, error) {
	atts, err := a.incomingAttachments(events)
	if err != nil || len(atts) == 0 {
		return blobs, err
	}
	out := append(slices.Clip(blobs), atts...)
	seen := make(map[digest.Digest]bool, len(out))
	k := 0
	for _, b := range out {
		if !seen[b.Digest] {
			seen[b.Digest] = true
			out[k] = b
			k++
		}
	}
	return out[:k], nil
}

// layoutInventory lists a capsule's blobs as a source's inventory does:
// the manifest, its layout files, then the snapshot's blobs sorted, each
// digest once.
func layoutInventory(md digest.Digest, size int64, m *manifest.Manifest, snap *capsule.Snapshot) []transfer.Blob {
	seen := map[digest.Digest]bool{}
	var out []transfer.Blob
	add := func(d digest.Digest, size int64) {
		if !seen[d] {
			seen[d] = true
			out = append(out, transfer.Blob{Digest: d, Size: size})
		}
	}
	add(md, size)
	for _, f := range m.Files {
		add(f.Digest, f.Size)
	}
	for _, b := range sortedBlobs(snap) {
		add(b.Digest, b.Size)
	}
	return out
}

// readBlobIn reads blob d from the first of dirs that holds it, checked
// against d.
func readBlobIn(fsys vfs.FS, dirs []string, d digest.Digest) ([]byte, error) {
	for _, dir := range dirs {
		b, err := vfs.ReadFile(fsys, filepath.Join(dir, d.Hex()))
		if err != nil {
			continue
		}
		if digest.FromBytes(b) != d {
			return nil, fmt.Errorf("%s does not hash to its name", d.Short())
		}
		return b, nil
	}
	return nil, fmt.Errorf("%s is not in this node's store", d.Short())
}

// shadowBases lists the delta bases a target advertises on its want and
// promise replies: the snapshot.json its shadow holds. Caller holds a.mu.
func (a *tenant) shadowBases() []digest.Digest {
	st, _ := a.loadShadow()
	if st == nil || st.Files[manifest.SnapshotPath] == "" {
		return nil
	}
	return []digest.Digest{st.Files[manifest.SnapshotPath]}
}

// rememberStaged keeps the snapshot.json of the move being activated as a
// delta base, noting the source it came from (which kept it as its
// shadow's). Caller holds a.mu, before the staging is promoted.
func (a *tenant) rememberStaged(move string) {
	in := a.tgt.in
	if in == nil || in.move != move || in.m == nil {
		return
	}
	sf, ok := in.m.File(manifest.SnapshotPath)
	if !ok || sf.Size > maxDeltaBlob {
		return
	}
	b, err := vfs.ReadFile(a.n.fsys, filepath.Join(in.capsule(), filepath.FromSlash(manifest.SnapshotPath)))
	if err != nil || digest.FromBytes(b) != sf.Digest {
		return
	}
	a.wire.remember(baseSnapshot, sf.Digest, b, ID(in.source))
}

// moveWire is what a move (source side) knows to keep its messages small:
// the current inventory's manifest and snapshot.json, and which blobs the
// target holds. Guarded by the moveRun's mu.
type moveWire struct {
	heads   []transfer.Blob // the current inventory's manifest and snapshot.json
	invLen  int             // blobs in that inventory
	kinds   map[digest.Digest]baseKind
	atPeer  map[digest.Digest]bool // blobs the target holds, as far as this move knows
	refused map[digest.Digest]bool // bases a failed push used: not used again
	deltas  int                    // delta frames the target stored
	files   int                    // of which workspace files
	byMan   int                    // requests sent with their inventory by manifest
	// paths names the workspace path of each file blob of the current
	// inventory, and versions the blobs each path had in this move's
	// inventories, oldest first: a file that changed between rounds
	// travels as a delta of the version the target already has.
	paths    map[digest.Digest]string
	versions map[string][]digest.Digest
}

// wireMessage is a request as it travels: its inventory may be marked as
// the manifest's (api.InventoryManifest), with the blob list left off.
type wireMessage struct {
	msg       transfer.Message
	inventory string
}

// noteLiveHeads keeps the manifest and snapshot.json of a pre-copy
// inventory in memory (the next commit rewrites the files) as the blobs
// an inventory by manifest needs and as delta bases. Caller holds a.mu
// and a.stepMu, so the committed capsule is the inventory's.
func (mr *moveRun) noteLiveHeads(a *tenant, inv transfer.Inventory) {
	capDir := a.capsule()
	mb, err := vfs.ReadFile(a.n.fsys, filepath.Join(capDir, manifest.FileName))
	if err != nil || digest.FromBytes(mb) != inv.Manifest {
		return
	}
	read := func(d digest.Digest) ([]byte, *capsule.Snapshot, bool) {
		b, err := vfs.ReadFile(a.n.fsys, filepath.Join(capDir, filepath.FromSlash(manifest.SnapshotPath)))
		if err != nil || digest.FromBytes(b) != d {
			return nil, nil, false
		}
		snap, err := capsule.ParseSnapshot(b)
		return b, snap, err == nil
	}
	mr.noteHeads(a, inv, mb, read)
}

// noteFrozenHeads is noteLiveHeads for the frozen inventory, whose
// manifest and snapshot.json frozenInventory built in memory.
func (mr *moveRun) noteFrozenHeads(a *tenant, inv transfer.Inventory) {
	mr.mu.Lock()
	mem, fw := mr.src.mem, mr.frozenWork
	mr.mu.Unlock()
	read := func(d digest.Digest) ([]byte, *capsule.Snapshot, bool) {
		b, ok := mem[d]
		return b, fw.snap, ok && fw != nil && bytes.Equal(b, fw.snapBytes)
	}
	if mb, ok := mem[inv.Manifest]; ok {
		mr.noteHeads(a, inv, mb, read)
	}
}

func (mr *moveRun) noteHeads(a *tenant, inv transfer.Inventory, mb []byte, snapshot func(digest.Digest) ([]byte, *capsule.Snapshot, bool)) {
	m, err := manifest.Parse(mb)
	if err != nil {
		return
	}
	sf, ok := m.File(manifest.SnapshotPath)
	if !ok || len(inv.Blobs) == 0 || inv.Blobs[0].Digest != inv.Manifest {
		return
	}
	sb, snap, ok := snapshot(sf.Digest)
	if !ok {
		return
	}
	a.wire.remember(baseManifest, inv.Manifest, mb, "")
	a.wire.remember(baseSnapshot, sf.Digest, sb, "")
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if mr.src.mem == nil {
		mr.src.mem = map[digest.Digest][]byte{}
	}
	mr.src.mem[inv.Manifest], mr.src.mem[sf.Digest] = mb, sb
	w := &mr.wire
	w.heads = []transfer.Blob{{Digest: inv.Manifest, Size: int64(len(mb))}, {Digest: sf.Digest, Size: int64(len(sb))}}
	w.invLen = len(inv.Blobs)
	if w.kinds == nil {
		w.kinds = map[digest.Digest]baseKind{}
	}
	w.kinds[inv.Manifest], w.kinds[sf.Digest] = baseManifest, baseSnapshot
	w.noteVersions(snap)
}

// noteVersions records the file blobs of the inventory's snapshot by path.
func (w *moveWire) noteVersions(snap *capsule.Snapshot) {
	if w.versions == nil {
		w.versions = map[string][]digest.Digest{}
	}
	w.paths = map[digest.Digest]string{}
	for _, e := range snap.Entries {
		if e.Type != capsule.TypeFile || e.Size > maxFileDelta {
			continue
		}
		w.paths[e.Blob] = e.Path
		if v := w.versions[e.Path]; len(v) == 0 || v[len(v)-1] != e.Blob {
			w.versions[e.Path] = append(v[max(0, len(v)-2):], e.Blob)
		}
	}
}

// byManifest returns m as it should travel and the blobs (manifest,
// snapshot.json) to push before it. When m's inventory is the one this
// move noted heads for, the blob list stays off the wire and the target
// rebuilds it from the manifest; otherwise m travels whole.
func (mr *moveRun) byManifest(m transfer.Message) (wireMessage, []transfer.Blob) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	w := &mr.wire
	if len(w.heads) != 2 || len(m.Blobs) != w.invLen || m.Blobs[0].Digest != w.heads[0].Digest ||
		m.Manifest != "" && m.Manifest != w.heads[0].Digest {
		return wireMessage{msg: m}, nil
	}
	out := m
	out.Blobs, out.Manifest = nil, w.heads[0].Digest
	var heads []transfer.Blob
	for _, h := range w.heads {
		if !w.atPeer[h.Digest] {
			heads = append(heads, h)
		}
	}
	return wireMessage{msg: out, inventory: api.InventoryManifest}, heads
}

// deltaPlan is the delta frames one push stream carries, by blob.
type deltaPlan struct {
	frames  map[digest.Digest]deltaBody
	guessed bool // a base is only guessed to be at the target
	files   int  // frames that carry a workspace file
}

type deltaBody struct {
	f api.Frame
	z []byte
}

func (p deltaPlan) used() bool { return len(p.frames) > 0 }

// planDeltas encodes as delta frames the blobs among blobs that this move
// holds in memory (manifest, snapshot.json) and that have a base the
// target holds or, when guess, probably holds, and the workspace files
// that have an earlier version there, when the delta is smaller. Only a
// pre-copy have guesses: resending it whole costs little, and no time of
// the frozen window.
func (mr *moveRun) planDeltas(a *tenant, blobs []transfer.Blob, guess bool) deltaPlan {
	var p deltaPlan
	a.wire.mu.Lock()
	off := a.wire.off
	a.wire.mu.Unlock()
	if off {
		return p
	}
	mr.mu.Lock()
	known := maps.Clone(mr.wire.atPeer)
	refused := maps.Clone(mr.wire.refused)
	fileMax, minSize := int64(maxFileDelta), int64(0)
	if !mr.frozenAt.IsZero() {
		fileMax, minSize = maxFrozenFileDelta, minFrozenDelta
	}
	mr.mu.Unlock()
	for _, b := range blobs {
		if b.Size < minSize {
			continue
		}
		mr.mu.Lock()
		kind, data := mr.wire.kinds[b.Digest], mr.src.mem[b.Digest]
		mr.mu.Unlock()
		var base base
		var guessed, ok bool
		switch {
		case kind != 0 && data != nil && len(data) <= maxDeltaBlob:
			base, guessed, ok = a.wire.pick(kind, b.Digest, mr.to, guess, func(d digest.Digest) bool { return known[d] }, func(d digest.Digest) bool { return refused[d] })
		case kind == 0 && b.Size <= fileMax:
			base, data, ok = mr.fileBase(a, b, known, refused)
		}
		if !ok {
			continue
		}
		f, z, err := deltaFrame(b.Digest, data, base)
		if err != nil || len(z) >= len(data)*3/4 {
			continue
		}
		if p.frames == nil {
			p.frames = map[digest.Digest]deltaBody{}
		}
		p.frames[b.Digest] = deltaBody{f: f, z: z}
		p.guessed = p.guessed || guessed
		if base.kind == baseFile {
			p.files++
		}
	}
	return p
}

// fileBase returns, for a workspace file blob b, the newest earlier
// version of its path that the target holds and this node still has in
// the capsule's blob store, with b's bytes; both are checked against their
// digests. ok is false when there is none.
func (mr *moveRun) fileBase(a *tenant, b transfer.Blob, known, refused map[digest.Digest]bool) (base, []byte, bool) {
	mr.mu.Lock()
	p, ok := mr.wire.paths[b.Digest]
	versions := slices.Clone(mr.wire.versions[p])
	src := mr.src.paths[b.Digest]
	mr.mu.Unlock()
	if !ok || src == "" {
		return base{}, nil, false
	}
	store := filepath.Join(a.capsule(), filepath.FromSlash(manifest.BlobsDir))
	for i := len(versions) - 1; i >= 0; i-- {
		q := versions[i]
		if q == b.Digest || !known[q] || refused[q] {
			continue
		}
		old, ok := readSmall(a.n.fsys, filepath.Join(store, q.Hex()), q)
		if !ok {
			continue
		}
		data, ok := readSmall(a.n.fsys, src, b.Digest)
		if !ok {
			return base{}, nil, false
		}
		return base{kind: baseFile, d: q, data: old}, data, true
	}
	return base{}, nil, false
}

// pushFailed forgets what the target was thought to hold, and the bases
// the failed stream used: the next attempt sends whole what it must.
func (mr *moveRun) pushFailed(p deltaPlan) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	mr.wire.atPeer = nil
	if mr.wire.refused == nil {
		mr.wire.refused = map[digest.Digest]bool{}
	}
	for _, d := range p.frames {
		mr.wire.refused[d.f.Base] = true
	}
}

// pushed notes blobs a push stored at the target, and what travelled
// small.
func (mr *moveRun) pushed(blobs []transfer.Blob, p deltaPlan, m *wireMessage) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	for _, b := range blobs {
		mr.wire.hold(b.Digest)
	}
	mr.wire.deltas += len(p.frames)
	mr.wire.files += p.files
	if m != nil && m.inventory != "" {
		mr.wire.byMan++
	}
}

func (w *moveWire) hold(d digest.Digest) {
	if w.atPeer == nil {
		w.atPeer = map[digest.Digest]bool{}
	}
	w.atPeer[d] = true
}

// appendNew appends the blobs of more that to lacks.
func appendNew(to, more []transfer.Blob) []transfer.Blob {
	for _, b := range more {
		if !slices.ContainsFunc(to, func(x transfer.Blob) bool { return x.Digest == b.Digest }) {
			to = append(to, b)
		}
	}
	return to
}
