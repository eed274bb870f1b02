package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

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

// incomingAttachments returns the attachment blobs of the first n events
// of the journal copy (a target's), indexing only events new since the
// last call. Caller holds a.mu.
func (a *tenant) incomingAttachments(n int) ([]transfer.Blob, error) {
	l, err := a.incoming()
	if err != nil {
		return nil, err
	}
	n = min(n, len(l.events))
	x := &a.tgt.att
	if x.Events() > n { // the copy was cut back, or this is an older head
		y, err := agentlog.AttachmentsOf(l.events[:n])
		if err != nil {
			return nil, err
		}
		if n == len(l.events) {
			*x = *y
		}
		return y.List(), nil
	}
	if err := x.Add(l.events[x.Events():n]); err != nil {
		return nil, err
	}
	return x.List(), nil
}

// parseSnapshot parses b, which the caller checked hashes to d, or
// returns the snapshot it parsed last for d, or the one parseAhead is
// parsing. Caller holds a.mu.
func (a *tenant) parseSnapshot(d digest.Digest, b []byte) (*capsule.Snapshot, error) {
	if a.tgt.snaps.s != nil && a.tgt.snaps.d == d {
		return a.tgt.snaps.s, nil
	}
	s, err := a.tgt.snapPre.parsed(d)
	if s == nil {
		s, err = capsule.ParseSnapshot(b)
	}
	if err == nil {
		a.tgt.snaps = snapMemo{d: d, s: s}
	}
	return s, err
}
