package capsule

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// TestVerifyAndCheckoutReadAnyShapeOfSnapshot pins that a snapshot.json in
// a shape Marshal does not write (here indented by encoding/json) is still
// read as the snapshot it is (FORMAT §5.1): its blobs count as referenced,
// a missing one is named, and Checkout writes its tree.
func TestVerifyAndCheckoutReadAnyShapeOfSnapshot(t *testing.T) {
	for _, shape := range []string{"marshal", "indented"} {
		t.Run(shape, func(t *testing.T) {
			c := newCapsule(t)
			s := populate(t, c)
			if shape == "indented" {
				sort.Slice(s.Entries, func(i, j int) bool { return s.Entries[i].Path < s.Entries[j].Path })
				b, err := json.MarshalIndent(s, "", "\t")
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Commit(func(tx *Tx) error { return tx.SetFile(manifest.SnapshotPath, bytes.NewReader(b)) }); err != nil {
					t.Fatal(err)
				}
			}
			r := mustVerify(t, vfs.OS{}, c.Dir())
			if len(r.Warnings) != 0 || r.Blobs != 3 {
				t.Errorf("blobs %d, warnings %v; want 3 blobs, no warning", r.Blobs, r.Warnings)
			}
			out := filepath.Join(t.TempDir(), "out")
			st, err := c.Checkout(out, CheckoutConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if want := s.Stats(); *st != want {
				t.Errorf("checkout stats %+v, want %+v", *st, want)
			}
			if target, err := os.Readlink(filepath.Join(out, "link")); err != nil || target != "f0.txt" {
				t.Errorf("link: %q, %v", target, err)
			}
			if err := os.Remove(blobPath(c, "hello\n")); err != nil {
				t.Fatal(err)
			}
			r, err = Verify(vfs.OS{}, c.Dir(), VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{manifest.BlobsDir + "/" + filepath.Base(blobPath(c, "hello\n")) + " missing"}
			if diff := cmp.Diff(want, kinds(r.Problems)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHashOrderHandsOutEachJobOnce pins hashAll's order: the jobs given
// first, then every blob not skipped, each once.
func TestHashOrderHandsOutEachJobOnce(t *testing.T) {
	// one layout job (0) and four blobs (1..4), blob 1 (job 2) large
	next := hashOrder([]int{2, 0}, []uint64{1 << 1}, 1)
	var got []int
	for range 5 {
		got = append(got, next())
	}
	if want := []int{2, 0, 1, 3, 4}; !cmp.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// TestVerifyBlobsHashedReadsNoBlob pins VerifyOptions.BlobsHashed: the
// blobs' contents are taken as checked (a changed blob of the same size
// goes unseen, and no blob byte is hashed), while a missing referenced blob
// and one of the wrong size are still reported.
func TestVerifyBlobsHashedReadsNoBlob(t *testing.T) {
	c := newCapsule(t)
	populate(t, c)
	writeOver(t, blobPath(c, "hello\n"), []byte("HELLO\n"))
	r, err := Verify(vfs.OS{}, c.Dir(), VerifyOptions{BlobsHashed: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Blobs != 3 {
		t.Fatalf("problems %v, blobs %d; want none, 3", r.Problems, r.Blobs)
	}
	full, err := Verify(vfs.OS{}, c.Dir(), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if full.OK() {
		t.Fatal("full verify missed the changed blob")
	}
	if blobBytes := full.Bytes - r.Bytes; blobBytes != int64(len("hello\n")+len("#!/bin/sh\necho hi\n")+len(strings.Repeat("big ", 100000))) {
		t.Errorf("full verify hashed %d bytes more than the hashed-blobs one, want the blobs' bytes", blobBytes)
	}
	writeOver(t, blobPath(c, "hello\n"), []byte("hello, longer\n"))
	if err := os.Remove(blobPath(c, "#!/bin/sh\necho hi\n")); err != nil {
		t.Fatal(err)
	}
	r, err = Verify(vfs.OS{}, c.Dir(), VerifyOptions{BlobsHashed: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		manifest.BlobsDir + "/" + filepath.Base(blobPath(c, "#!/bin/sh\necho hi\n")) + " missing",
		manifest.SnapshotPath + " reference",
	}
	if diff := cmp.Diff(want, kinds(r.Problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
