package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
)

// snapshotLike returns n lines shaped like snapshot.json entries, the
// lines listed in changed carrying another digest.
func snapshotLike(n int, changed ...int) []byte {
	var b strings.Builder
	b.WriteString("{\"entries\":[\n")
	for i := range n {
		seed := fmt.Sprintf("file %d", i)
		for _, c := range changed {
			if c == i {
				seed += " changed"
			}
		}
		fmt.Fprintf(&b, "{\"path\":\"src/f%04d.txt\",\"type\":\"file\",\"size\":%d,\"blob\":\"%s\"},\n", i, 1000+i, digest.FromString(seed))
	}
	b.WriteString("]}\n")
	return []byte(b.String())
}

// TestDeltaFrameRoundTrip encodes a blob against a base, writes it as a
// delta frame of a push stream, reads the frame back and decodes it
// (PROTOCOL §4a, delta frames).
func TestDeltaFrameRoundTrip(t *testing.T) {
	snap := snapshotLike(500)
	cases := []struct {
		name       string
		base, data []byte
		smaller    bool // the delta must be much smaller than the blob
	}{
		{"snapshot with three entries changed", snap, snapshotLike(500, 3, 250, 499), true},
		{"snapshot with entries added", snap, snapshotLike(520), true},
		{"unrelated bytes", []byte("a base that shares nothing"), bytes.Repeat([]byte{7, 1, 9}, 1000), false},
		{"empty blob", snap, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := base{kind: baseSnapshot, d: digest.FromBytes(c.base), data: c.base}
			f, z, err := deltaFrame(digest.FromBytes(c.data), c.data, b)
			if err != nil {
				t.Fatal(err)
			}
			if c.smaller && len(z)*20 > len(c.data) {
				t.Errorf("delta of %d bytes for a %d-byte blob", len(z), len(c.data))
			}
			var buf bytes.Buffer
			api.WriteStreamHeader(&buf)
			if _, err := api.WriteFrame(&buf, f, bytes.NewReader(z)); err != nil {
				t.Fatal(err)
			}
			got, gz, err := api.NewStreamReader(&buf, 0).Next()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(f, got); diff != "" {
				t.Fatalf("frame header (-want +got):\n%s", diff)
			}
			zb, err := io.ReadAll(gz)
			if err != nil {
				t.Fatal(err)
			}
			out, err := decodeDelta(got, c.base, zb)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, c.data) {
				t.Errorf("decoded %d bytes, want the %d of the blob", len(out), len(c.data))
			}
		})
	}
}

// TestReceiveDeltaRefuses feeds a node's agent delta frames that are
// corrupted, mismatched, oversized or against a base it lacks: each is
// refused with nothing stored in the CAS store, and the good one is stored.
func TestReceiveDeltaRefuses(t *testing.T) {
	n := newNode(t, t.TempDir(), nodeOpts{})
	a := n.targetTenant("01JTESTAGENT0000000000000000")
	old, other := snapshotLike(300), snapshotLike(300, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	if _, _, err := a.cas().Put(digest.FromBytes(old), bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.cas().Put(digest.FromBytes(other), bytes.NewReader(other)); err != nil {
		t.Fatal(err)
	}
	data := snapshotLike(300, 42)
	good, gz, err := deltaFrame(digest.FromBytes(data), data, base{d: digest.FromBytes(old), data: old})
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(gz)
	flipped[len(flipped)/2] ^= 0x40
	cases := []struct {
		name string
		edit func(f *api.Frame) []byte
		want error // nil: stored
	}{
		{"corrupted compressed bytes", func(*api.Frame) []byte { return flipped }, ErrBadDelta},
		{"truncated compressed bytes", func(f *api.Frame) []byte { f.Size = int64(len(gz) / 2); return gz[:len(gz)/2] }, ErrBadDelta},
		{"wrong digest", func(f *api.Frame) []byte { f.Digest = digest.FromString("x"); return gz }, ErrBadDelta},
		{"wrong size", func(f *api.Frame) []byte { f.BlobSize--; return gz }, ErrBadDelta},
		{"another base the node holds", func(f *api.Frame) []byte { f.Base = digest.FromBytes(other); return gz }, ErrBadDelta},
		{"base the node lacks", func(f *api.Frame) []byte { f.Base = digest.FromString("never sent"); return gz }, ErrNoBase},
		{"blob over the limit", func(f *api.Frame) []byte { f.BlobSize = maxDeltaBlob + 1; return gz }, ErrBadDelta},
		{"good", func(*api.Frame) []byte { return gz }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := good
			z := c.edit(&f)
			pb, err := a.receiveDelta(f, bytes.NewReader(z))
			if c.want == nil {
				if err != nil || pb == nil {
					t.Fatalf("receiveDelta: %v, %v", pb, err)
				}
				if err := pb.Finish(); err != nil {
					t.Fatal(err)
				}
				if got, _ := vfs.ReadFile(n.fsys, a.cas().Path(f.Digest)); !bytes.Equal(got, data) {
					t.Fatalf("stored %d bytes, want the blob", len(got))
				}
				return
			}
			if !errors.Is(err, c.want) || pb != nil {
				t.Fatalf("err = %v (blob %v), want %v", err, pb, c.want)
			}
			ents, _ := n.fsys.ReadDir(a.cas().Dir)
			if len(ents) != 2 {
				t.Errorf("the CAS store holds %d entries after a refused delta, want the 2 bases", len(ents))
			}
		})
	}
}

// TestInventoryByManifest checks that the inventory a target rebuilds
// from a manifest is the source's inventory, blob for blob, and that it
// refuses when it lacks what it needs.
func TestInventoryByManifest(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{})
	src, dst := c.nodes[0], c.nodes[1]
	id := createAgent(t, src, workspaceOf(t, 40, 512))
	sa, err := src.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	mr := newMoveRun("01JTESTMOVE000000000000000", dst.ID(), 2)
	sa.mu.Lock()
	inv, err := sa.liveInventory(mr)
	sa.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	ta := dst.targetTenant(id)
	msg := transfer.Message{Type: transfer.MsgOffer, Manifest: inv.Manifest, Move: mr.id}
	mb := mr.src.mem[inv.Manifest]
	m, err := manifest.Parse(mb)
	if err != nil {
		t.Fatal(err)
	}
	sf, _ := m.File(manifest.SnapshotPath)
	derive := func() ([]transfer.Blob, error) {
		ta.mu.Lock()
		defer ta.mu.Unlock()
		ta.wire.derived = ""
		return ta.manifestInventory(msg)
	}
	if _, err := derive(); err == nil {
		t.Fatal("an inventory was derived from an empty store")
	}
	ta.cas().Put(inv.Manifest, bytes.NewReader(mb))
	if _, err := derive(); err == nil {
		t.Fatal("an inventory was derived without the snapshot")
	}
	ta.cas().Put(sf.Digest, bytes.NewReader(mr.src.mem[sf.Digest]))
	got, err := derive()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inv.Blobs, got); diff != "" {
		t.Errorf("inventory by manifest (-source +derived):\n%s", diff)
	}
	// Through the peer API: a have with its full list and one by manifest
	// get the same want list; one naming a manifest the target lacks is
	// refused.
	have := transfer.Message{Type: transfer.MsgHave, Agent: id, Move: mr.id, From: string(src.ID()), To: string(dst.ID()), Journal: inv.Journal}
	wants := map[string][]digest.Digest{}
	for _, c := range []struct {
		name      string
		blobs     []transfer.Blob
		manifest  digest.Digest
		inventory string
	}{
		{"full list", inv.Blobs, "", ""},
		{"by manifest", nil, inv.Manifest, api.InventoryManifest},
		{"by an unknown manifest", nil, digest.FromString("no such manifest"), api.InventoryManifest},
	} {
		m := have
		m.Blobs, m.Manifest = c.blobs, c.manifest
		rep, err := dst.Message(t.Context(), string(src.ID()), api.Message{Call: "have", Body: mustJSON(m), Inventory: c.inventory})
		if c.name == "by an unknown manifest" {
			if !errors.Is(err, api.ErrInvalid) {
				t.Errorf("%s: err = %v, want %v", c.name, err, api.ErrInvalid)
			}
			continue
		}
		if err != nil || len(rep.Messages) != 1 {
			t.Fatalf("%s: %+v, %v", c.name, rep, err)
		}
		var w transfer.Message
		if err := jsonUnmarshal(rep.Messages[0].Body, &w); err != nil || w.Type != transfer.MsgWant {
			t.Fatalf("%s: reply %s, %v", c.name, rep.Messages[0].Body, err)
		}
		wants[c.name] = w.Want
	}
	if len(wants["full list"]) == 0 {
		t.Error("the target wants nothing of a store it never received")
	}
	if diff := cmp.Diff(wants["full list"], wants["by manifest"]); diff != "" {
		t.Errorf("want lists (-full list +by manifest):\n%s", diff)
	}

	wm, heads := mr.byManifest(transfer.Message{Type: transfer.MsgHave, Blobs: inv.Blobs})
	if wm.inventory != api.InventoryManifest || wm.msg.Blobs != nil || wm.msg.Manifest != inv.Manifest || len(heads) != 2 {
		t.Errorf("have by manifest = %+v, heads %v", wm, heads)
	}
	if wm, _ := mr.byManifest(transfer.Message{Type: transfer.MsgHave, Blobs: inv.Blobs[1:]}); wm.inventory != "" {
		t.Errorf("another inventory travels by manifest: %+v", wm)
	}
}

// workspaceOf writes files files of size bytes each and returns the folder.
func workspaceOf(t *testing.T, files, size int) string {
	ws := t.TempDir()
	for i := range files {
		data := bytes.Repeat([]byte(fmt.Sprintf("%05d ", i)), size/6+1)[:size]
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%04d.txt", i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// TestMoveBackWithAndWithoutDeltas moves an agent with a few hundred
// files away and back after a small change, once with delta frames and
// once without: both keep every invariant (one runner, the holder's
// capsule and journal verify, no staging left), inventories travel by
// manifest, and the move with deltas sends fewer bytes than the one
// without by at least one snapshot.json.
func TestMoveBackWithAndWithoutDeltas(t *testing.T) {
	sent := map[bool]int64{}
	var snapSize int64
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("deltas=%v", !off), func(t *testing.T) {
			c := newCluster(t, nodeOpts{}, nodeOpts{})
			a, b := c.nodes[0], c.nodes[1]
			id := createAgent(t, a, workspaceOf(t, 400, 256))
			if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
				t.Fatalf("move: %+v", res)
			}
			waitSteps(t, b, id, 3)
			c.checkHolder(b, id)
			ba, err := b.getTenant(id)
			if err != nil {
				t.Fatal(err)
			}
			ba.wire.mu.Lock()
			ba.wire.off = off
			ba.wire.mu.Unlock()
			for i := range 4 {
				os.WriteFile(filepath.Join(ba.work(), fmt.Sprintf("f%04d.txt", i*97)), []byte(fmt.Sprintf("changed %d\n", i)), 0o644)
			}
			res := move(t, b, a, id)
			if res.Outcome != api.OutcomeCommitted {
				t.Fatalf("move back: %+v", res)
			}
			waitSteps(t, a, id, 3)
			c.checkHolder(a, id)
			ba.src.move.mu.Lock()
			w := ba.src.move.wire
			ba.src.move.mu.Unlock()
			t.Logf("move back: %d bytes sent, %d delta frames (%d of workspace files), %d requests by manifest, %d pre-copy rounds",
				res.BytesSent, w.deltas, w.files, w.byMan, res.PrecopyRounds)
			if w.byMan < 3 {
				t.Errorf("%d requests travelled by manifest, want have, offer and prepare at least", w.byMan)
			}
			if off != (w.deltas == 0) {
				t.Errorf("%d delta frames sent with deltas off=%v", w.deltas, off)
			}
			sent[off] = res.BytesSent
			aa, err := a.getTenant(id)
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := a.fsys.Stat(filepath.Join(aa.capsule(), filepath.FromSlash(manifest.SnapshotPath))); err == nil {
				snapSize = fi.Size()
			}
		})
	}
	t.Logf("bytes sent: %d with deltas, %d without; snapshot.json %d bytes", sent[false], sent[true], snapSize)
	if snapSize == 0 || sent[true]-sent[false] < snapSize {
		t.Errorf("deltas saved %d bytes, less than one snapshot.json (%d bytes)", sent[true]-sent[false], snapSize)
	}
}

// TestGuessedBaseFallsBack moves an agent back to a node that dropped the
// shadow whose snapshot.json the source guesses it holds, and forgot its
// own copy (as after a restart): the target
// refuses the delta frame (missing base), the source sends the blob whole
// and the move commits with every invariant kept.
func TestGuessedBaseFallsBack(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := c.nodes[0], c.nodes[1]
	id := createAgent(t, a, workspaceOf(t, 100, 128))
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	waitSteps(t, b, id, 3)
	aa := a.targetTenant(id)
	aa.mu.Lock()
	st, _ := aa.loadShadow()
	aa.dropShadow()
	aa.mu.Unlock()
	aa.wire.mu.Lock()
	aa.wire.bases = nil
	aa.wire.mu.Unlock()
	if st == nil {
		t.Fatal("the source of the first move kept no shadow")
	}
	guess := st.Files[manifest.SnapshotPath]
	res := move(t, b, a, id)
	if res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move back: %+v", res)
	}
	waitSteps(t, a, id, 3)
	c.checkHolder(a, id)
	ba, _ := b.getTenant(id)
	ba.src.move.mu.Lock()
	refused := ba.src.move.wire.refused[guess]
	ba.src.move.mu.Unlock()
	if !refused {
		t.Errorf("the guessed base %s was not refused by the target", guess.Short())
	}
}

// BenchmarkDelta times encoding and decoding delta frames: a snapshot.json
// of 1,000 entries with ten changed, and a 1 MiB file rewritten with
// unrelated bytes (the worst case: the delta is thrown away).
func BenchmarkDelta(b *testing.B) {
	random := func(seed byte) []byte {
		out := make([]byte, 1<<20)
		x := uint32(seed) + 1
		for i := range out {
			x = x*1664525 + 1013904223
			out[i] = byte(x >> 24)
		}
		return out
	}
	cases := []struct {
		name       string
		base, data []byte
	}{
		{"snapshot", snapshotLike(1000), snapshotLike(1000, 1, 100, 200, 300, 400, 500, 600, 700, 800, 900)},
		{"rewritten-1MiB", random(1), random(2)},
	}
	for _, c := range cases {
		bs := base{d: digest.FromBytes(c.base), data: c.base}
		b.Run("encode/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if _, _, err := deltaFrame(digest.FromBytes(c.data), c.data, bs); err != nil {
					b.Fatal(err)
				}
			}
		})
		f, z, _ := deltaFrame(digest.FromBytes(c.data), c.data, bs)
		b.Run("decode/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if _, err := decodeDelta(f, c.base, z); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
