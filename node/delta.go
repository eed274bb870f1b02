package node

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/store"
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

func sortedBlobs(s *capsule.Snapshot) []transfer.Blob {
	var out []transfer.Blob
	for d, size := range s.Blobs() {
		out = append(out, transfer.Blob{Digest: d, Size: size})
	}
	sortBlobs(out)
	return out
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

func sortBlobs(bs []transfer.Blob) {
	sort.Slice(bs, func(i, j int) bool { return bs[i].Digest < bs[j].Digest })
}
