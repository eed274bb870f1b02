package capsule

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// withBatchBlobs lowers the batch size for one test.
func withBatchBlobs(t *testing.T, n int) {
	old := batchBlobs
	batchBlobs = n
	t.Cleanup(func() { batchBlobs = old })
}

// writeWorkspace writes files (path -> body) below /ws, durably.
func writeWorkspace(t testing.TB, fsys vfs.FS, files map[string]string) {
	for p, body := range files {
		name := filepath.Join("/ws", p)
		if err := vfs.MkdirAllDurable(fsys, filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFile(fsys, name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// batchedFiles is a workspace of 7 files holding 6 distinct blobs.
var batchedFiles = map[string]string{
	"a": "1\n", "b": "2\n", "c": "3\n", "d/e": "4\n", "d/f": "5\n", "d/g": "6\n", "dup": "1\n",
}

// FORMAT §5.2: a snapshot syncs its new blobs in batches: per batch one
// SyncFiles and one fsync of the blob folder, never an fsync per blob.
func TestSnapshotSyncsBlobsInBatches(t *testing.T) {
	withBatchBlobs(t, 4)
	mem := vfs.NewMem()
	if _, err := Init(mem, "/cap", testConfig()); err != nil {
		t.Fatal(err)
	}
	writeWorkspace(t, mem, batchedFiles)
	faulty := vfs.NewFaulty(mem)
	c, err := Open(faulty, "/cap", Config{})
	if err != nil {
		t.Fatal(err)
	}
	faulty.ResetOps()
	res, err := c.SnapshotFrom("/ws", SnapshotConfig{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.NewBlobs != 6 {
		t.Errorf("NewBlobs = %d, want 6", res.NewBlobs)
	}
	blobs := "/cap/" + manifest.BlobsDir
	counts := map[string]int{}
	for _, op := range faulty.DurableOps() {
		switch {
		case op.Op == vfs.OpSyncDir && op.Path == blobs:
			counts["syncdir blobs"]++
		case op.Op == vfs.OpSyncFiles && strings.HasPrefix(op.Path, blobs+"/"):
			counts["syncfiles blobs"]++
		case op.Op == vfs.OpSync && strings.HasPrefix(op.Path, blobs+"/"):
			counts["fsync of one blob"]++
		}
	}
	want := map[string]int{"syncdir blobs": 2, "syncfiles blobs": 2} // 6 blobs in batches of 4
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("durable steps on the blob folder: %v, want %v", counts, want)
	}
	if r, err := Verify(mem, "/cap", VerifyOptions{}); err != nil || !r.OK() {
		t.Fatalf("verify: %v %v", err, r)
	}
}

// FORMAT §4.4: a crash at any durable step of a snapshot whose blobs span
// several batches, over a capsule that already holds a snapshot, leaves
// the old snapshot or the new one, and the capsule verifies.
func TestCrashDuringBatchedSnapshot(t *testing.T) {
	withBatchBlobs(t, 2)
	vfstest.ForEachCrashPoint(t,
		func(t testing.TB, fsys vfs.FS) {
			if _, err := Init(fsys, "/cap", testConfig()); err != nil {
				t.Fatal(err)
			}
			writeWorkspace(t, fsys, map[string]string{"old": "old\n", "a": "1\n"})
			c, err := Open(fsys, "/cap", Config{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.SnapshotFrom("/ws", SnapshotConfig{Workers: 1}); err != nil {
				t.Fatal(err)
			}
			if err := fsys.RemoveAll("/ws"); err != nil {
				t.Fatal(err)
			}
			writeWorkspace(t, fsys, batchedFiles)
		},
		func(fsys vfs.FS) error {
			c, err := Open(fsys, "/cap", Config{})
			if err != nil {
				return err
			}
			_, err = c.SnapshotFrom("/ws", SnapshotConfig{Workers: 1})
			return err
		},
		func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
			c := checkRecovers(t, fsys, "/cap")
			s, err := c.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if n := s.Stats().Files; n != 2 && n != len(batchedFiles) || at.Done() && n != len(batchedFiles) {
				t.Fatalf("%s: snapshot has %d files", at, n)
			}
		})
}

// blobStats counts the stats of names in the blob folder among ops.
func blobStats(ops []vfs.OpRecord) int {
	n := 0
	for _, op := range ops {
		if op.Op == vfs.OpStat && strings.HasPrefix(op.Path, "/cap/"+manifest.BlobsDir+"/") {
			n++
		}
	}
	return n
}

// A snapshot of new files into an empty store asks the store about none
// of their blobs (the filter rules each out), and still stores each blob
// once: a duplicate whose first copy was installed in an earlier batch is
// found present. A second snapshot of the same tree asks about each blob
// and stores none.
func TestSnapshotFilterSkipsStatsOfNewBlobs(t *testing.T) {
	withBatchBlobs(t, 2)
	mem := vfs.NewMem()
	if _, err := Init(mem, "/cap", testConfig()); err != nil {
		t.Fatal(err)
	}
	writeWorkspace(t, mem, batchedFiles)
	faulty := vfs.NewFaulty(mem)
	c, err := Open(faulty, "/cap", Config{})
	if err != nil {
		t.Fatal(err)
	}
	faulty.ResetOps()
	res, err := c.SnapshotFrom("/ws", SnapshotConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	// One stat per blob remains: the install's check that the name is free.
	// Without the filter each blob is looked up once more before it is written.
	if got := blobStats(faulty.Ops()); res.NewBlobs != 6 || got > 6+1 {
		t.Errorf("first snapshot: %d new blobs (want 6), %d stats in the blob folder (want at most 7)", res.NewBlobs, got)
	}
	faulty.ResetOps()
	res, err = c.SnapshotFrom("/ws", SnapshotConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := blobStats(faulty.Ops()); res.NewBlobs != 0 || got < 6 {
		t.Errorf("second snapshot: %d new blobs (want 0), %d stats in the blob folder (want one per blob at least)", res.NewBlobs, got)
	}
}

// The filter rules out no blob the store holds or the filter was told of,
// and most others; a store larger than the listing bound gets no filter.
func TestBlobFilter(t *testing.T) {
	mem := vfs.NewMem()
	s := NewBlobStore(mem, "/blobs")
	var held []digest.Digest
	for i := range 100 {
		d, _, err := s.Put(strings.NewReader(fmt.Sprint("held ", i)))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, d)
	}
	if err := vfs.WriteFile(mem, "/blobs/.tmp-blob-x", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newBlobFilter(s, 1000)
	if f == nil {
		t.Fatal("no filter for a store of 100 blobs")
	}
	for _, d := range held {
		if f.absent(d) {
			t.Fatalf("%s is held but the filter rules it out", d.Short())
		}
	}
	ruledOut := 0
	for i := range 1000 {
		d := digest.FromBytes([]byte(fmt.Sprint("new ", i)))
		if f.absent(d) {
			ruledOut++
		}
		f.add(d)
		if f.absent(d) {
			t.Fatalf("%s was added but the filter rules it out", d.Short())
		}
	}
	if ruledOut < 950 {
		t.Errorf("the filter ruled out %d of 1000 new blobs, want at least 950", ruledOut)
	}
	if f := newBlobFilter(NewBlobStore(mem, "/missing"), 10); f == nil || !f.absent(held[0]) {
		t.Errorf("a store not yet created: filter %v, want an empty one", f)
	}
	old := filterScanMin
	filterScanMin = 10
	defer func() { filterScanMin = old }()
	if f := newBlobFilter(s, 10); f != nil {
		t.Errorf("a store of 100 blobs, bound 10 + 4 x 10: got a filter, want none")
	}
}
