package capsule

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// TestVerifyHashesEveryBlobOnce pins hashAll's split between the large
// files and the small blobs hashed in pairs: on the host file system, every
// blob is hashed exactly once (the bytes hashed are the layout files', the
// journal's and every blob's), and a changed blob is named whether it is
// small (hashed in a lane) or large (hashed alone).
func TestVerifyHashesEveryBlobOnce(t *testing.T) {
	c := newCapsule(t)
	s := NewSnapshot()
	bodies := []string{strings.Repeat("L", pipelineMin+1)}
	for i := range 37 {
		bodies = append(bodies, strings.Repeat(fmt.Sprint(i), 1+i*997))
	}
	var blobBytes int64
	for i, body := range bodies {
		d, n, err := c.PutBlob(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		blobBytes += n
		s.Entries = append(s.Entries, Entry{Path: fmt.Sprintf("f%02d", i), Type: TypeFile, Size: n, Blob: d})
	}
	if err := c.Commit(func(tx *Tx) error { return tx.SetSnapshot(s) }); err != nil {
		t.Fatal(err)
	}
	r := mustVerify(t, vfs.OS{}, c.Dir())
	layout := r.Bytes - blobBytes
	if r.Blobs != len(bodies) || layout < 0 || layout > 64<<10 {
		t.Fatalf("hashed %d bytes of %d blobs; want the %d blob bytes once plus the small layout files", r.Bytes, r.Blobs, blobBytes)
	}
	small, large := blobPath(c, bodies[20]), blobPath(c, bodies[0])
	writeOver(t, small, []byte(strings.Repeat("z", len(bodies[20]))))
	writeOver(t, large, []byte(strings.Repeat("M", len(bodies[0]))))
	r, err := Verify(vfs.OS{}, c.Dir(), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		manifest.BlobsDir + "/" + filepath.Base(large) + " " + string(KindCorrupt),
		manifest.BlobsDir + "/" + filepath.Base(small) + " " + string(KindCorrupt),
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, kinds(r.Problems)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
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
