package node

import (
	"bytes"
	"maps"
	"path/filepath"
	"slices"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

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

// appendNew appends the blobs of more that to lacks.
func appendNew(to, more []transfer.Blob) []transfer.Blob {
	for _, b := range more {
		if !slices.ContainsFunc(to, func(x transfer.Blob) bool { return x.Digest == b.Digest }) {
			to = append(to, b)
		}
	}
	return to
}
