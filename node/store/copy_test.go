package store

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// frame is one blob frame of a test push stream: data announced as d.
type frame struct {
	d    digest.Digest
	data []byte
}

func honest(data []byte) frame { return frame{d: digest.FromBytes(data), data: data} }

// streamOf encodes frames as a push stream and returns its reader.
func streamOf(t *testing.T, frames ...frame) *api.StreamReader {
	t.Helper()
	var b bytes.Buffer
	if err := api.WriteStreamHeader(&b); err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if _, err := api.WriteFrame(&b, api.Frame{Kind: api.FrameBlob, Digest: f.d, Size: int64(len(f.data))}, bytes.NewReader(f.data)); err != nil {
			t.Fatal(err)
		}
	}
	return api.NewStreamReader(&b, 0)
}

// receiveAll stores every blob frame of s the way Push does, finishing
// each one in turn; it returns the first error.
func receiveAll(c Disk, s *api.StreamReader) error {
	for {
		f, r, err := s.Next()
		if err == io.EOF {
			return c.Sync()
		}
		if err != nil {
			return err
		}
		pb, _, err := c.Receive(f.Digest, f.Size, r)
		if err != nil {
			return err
		}
		if pb != nil {
			if err := pb.Finish(); err != nil {
				return err
			}
		}
	}
}

// TestCASReceive stores blobs of every size class through receive (in
// memory up to ChunkSize, streamed to a file above) and checks each is
// stored under its name, or refused with nothing left behind when its
// bytes are not those of its digest, on OS and Mem.
func TestCASReceive(t *testing.T) {
	sizes := []int{0, 1, 4096, ChunkSize - 1, ChunkSize, ChunkSize + 1, 2*ChunkSize + 7}
	for _, fsName := range []string{"OS", "Mem"} {
		for _, size := range sizes {
			for _, lie := range []bool{false, true} {
				name := fsName + "/" + strings.ReplaceAll(sizeName(int64(size)), " ", "") + map[bool]string{false: "/honest", true: "/lying"}[lie]
				t.Run(name, func(t *testing.T) {
					fsys, dir := vfs.FS(vfs.NewMem()), "/cas"
					if fsName == "OS" {
						fsys, dir = vfs.OS{}, filepath.Join(t.TempDir(), "cas")
					}
					c := Disk{FS: fsys, Dir: dir}
					data := randomBytes(uint64(size)+1, size)
					f := honest(data)
					if lie {
						f.d = digest.FromBytes(append([]byte("not "), data...))
					}
					err := receiveAll(c, streamOf(t, f))
					if got, want := err != nil, lie; got != want {
						t.Fatalf("receive: err = %v, want an error: %v", err, want)
					}
					if lie && !errors.Is(err, api.ErrDigestMismatch) {
						t.Errorf("receive: err = %v, want api.ErrDigestMismatch", err)
					}
					ents, _ := fsys.ReadDir(dir)
					var names []string
					for _, e := range ents {
						names = append(names, e.Name())
					}
					want := []string{f.d.Hex()}
					if lie {
						want = nil
					}
					if strings.Join(names, ",") != strings.Join(want, ",") {
						t.Fatalf("store holds %v, want %v", names, want)
					}
					if !lie {
						got, err := vfs.ReadFile(fsys, c.Path(f.d))
						if err != nil || !bytes.Equal(got, data) {
							t.Errorf("stored blob: %d bytes, err %v; want the %d bytes sent", len(got), err, len(data))
						}
					}
				})
			}
		}
	}
}

// TestCASReceivePresent: a blob the store has is read to its end (the
// stream goes on with the next frame) and not stored again.
func TestCASReceivePresent(t *testing.T) {
	c := Disk{FS: vfs.NewMem(), Dir: "/cas"}
	a, b := honest([]byte("first")), honest([]byte("second"))
	if err := receiveAll(c, streamOf(t, a)); err != nil {
		t.Fatal(err)
	}
	if err := receiveAll(c, streamOf(t, a, b)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []frame{a, b} {
		if !casHolds(c, f.d, int64(len(f.data))) {
			t.Errorf("store lacks %s", f.d.Short())
		}
	}
}

// TestCopyVerifiedTrust shows when copyOver skips the hash: only for
// a file this process noted as verified and that has not changed since.
// Noting a file under a digest it does not hash to (which the node never
// does) makes the skip visible: the copy of a trusted file succeeds under
// that digest, any other is refused.
func TestCopyVerifiedTrust(t *testing.T) {
	wrong := digest.FromBytes([]byte("something else"))
	tests := []struct {
		name   string
		mem    bool
		note   bool // note the file as holding wrong
		change bool // rewrite the file after noting it
		want   error
	}{
		{"not noted: hashed, refused", false, false, false, ErrBlobMismatch},
		{"noted: trusted, copied", false, true, false, nil},
		{"noted then rewritten: hashed, refused", false, true, true, ErrBlobMismatch},
		{"Mem has no inodes: hashed, refused", true, true, false, ErrBlobMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys, dir := vfs.FS(vfs.OS{}), t.TempDir()
			if tc.mem {
				fsys, dir = vfs.NewMem(), "/"
			}
			src, dst := filepath.Join(dir, "blob"), filepath.Join(dir, "copy")
			data := []byte("the bytes of the blob")
			if err := vfs.WriteFile(fsys, src, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.note {
				verifiedBlobs.note(fsys, src, wrong)
			}
			if tc.change {
				// A file's change time has the kernel clock's tick as its
				// grain on many systems: let one pass, as in real use.
				time.Sleep(20 * time.Millisecond)
				if err := os.WriteFile(src, []byte("THE bytes of the blob"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := CopyOver(fsys, src, dst, wrong, int64(len(data)), 0o640, false)
			if !errors.Is(err, tc.want) {
				t.Fatalf("copyOver = %v, want %v", err, tc.want)
			}
			got, rerr := vfs.ReadFile(fsys, dst)
			if tc.want != nil {
				if rerr == nil {
					t.Errorf("a refused copy left %s behind", dst)
				}
				return
			}
			if !bytes.Equal(got, data) {
				t.Errorf("copy = %q, want %q", got, data)
			}
			if fi, err := fsys.Stat(dst); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("copy mode: %v, %v; want 0640", fi.Mode(), err)
			}
		})
	}
}

// TestCopyVerifiedReceived: a blob that came through receive is copied
// (without a second hash on OS) to the same bytes, on OS and Mem, and a
// copy whose announced size is wrong is refused either way.
func TestCopyVerifiedReceived(t *testing.T) {
	for _, fsName := range []string{"OS", "Mem"} {
		t.Run(fsName, func(t *testing.T) {
			fsys, dir := vfs.FS(vfs.NewMem()), "/"
			if fsName == "OS" {
				fsys, dir = vfs.OS{}, t.TempDir()
			}
			c := Disk{FS: fsys, Dir: filepath.Join(dir, "cas")}
			f := honest(randomBytes(7, 3*ChunkSize/2))
			if err := receiveAll(c, streamOf(t, f)); err != nil {
				t.Fatal(err)
			}
			fi, err := fsys.Stat(c.Path(f.d))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := verifiedBlobs.has(fi, f.d), fsName == "OS"; got != want {
				t.Errorf("trusted after receive: %v, want %v", got, want)
			}
			dst := filepath.Join(dir, "work-file")
			if _, err := CopyOver(fsys, c.Path(f.d), dst, f.d, int64(len(f.data)), 0o755, false); err != nil {
				t.Fatal(err)
			}
			if got, err := vfs.ReadFile(fsys, dst); err != nil || !bytes.Equal(got, f.data) {
				t.Errorf("copy: %d bytes, %v; want the blob's %d", len(got), err, len(f.data))
			}
			_, err = CopyOver(fsys, c.Path(f.d), dst+"2", f.d, int64(len(f.data))+1, 0o644, false)
			if !errors.Is(err, ErrBlobMismatch) {
				t.Errorf("copy with a wrong size = %v, want ErrBlobMismatch", err)
			}
		})
	}
}

// TestCopyChunks: copies of every length arrive whole, and a reader's
// error is returned, not taken for the end.
func TestCopyChunks(t *testing.T) {
	for _, n := range []int{0, 1, ChunkSize - 1, ChunkSize, ChunkSize + 1, 3 * ChunkSize} {
		data := randomBytes(uint64(n), n)
		var out bytes.Buffer
		got, err := CopyChunks(&out, io.MultiReader(bytes.NewReader(data[:n/2]), bytes.NewReader(data[n/2:])))
		if err != nil || got != int64(n) || !bytes.Equal(out.Bytes(), data) {
			t.Errorf("copyChunks of %d bytes: %d, %v; contents equal: %v", n, got, err, bytes.Equal(out.Bytes(), data))
		}
	}
	boom := errors.New("boom")
	if _, err := CopyChunks(io.Discard, io.MultiReader(bytes.NewReader(make([]byte, ChunkSize)), iotestErr{boom})); !errors.Is(err, boom) {
		t.Errorf("copyChunks of a failing reader = %v, want %v", err, boom)
	}
	if _, err := ReadToEnd(bytes.NewReader(make([]byte, 11)), make([]byte, 10)); !errors.Is(err, ErrBlobMismatch) {
		t.Errorf("readToEnd of a reader longer than the buffer = %v, want ErrBlobMismatch", err)
	}
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

// casHolds reports whether the store holds blob d as a file of size bytes.
func casHolds(c Disk, d digest.Digest, size int64) bool {
	fi, err := c.FS.Stat(c.Path(d))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

// TestApplyDeltaWritesOverInPlace: a changed file of its own is written
// over in place (same inode, new bytes and mode, its directory not noted
// for a sync), while a changed file that shares its inode with another
// link is replaced, leaving the other link's bytes alone.
func TestApplyDeltaWritesOverInPlace(t *testing.T) {
	root := t.TempDir()
	blobs, work := filepath.Join(root, "blobs"), filepath.Join(root, "work")
	for _, d := range []string{blobs, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	blob := func(s string) digest.Digest {
		d := digest.FromBytes([]byte(s))
		if err := os.WriteFile(filepath.Join(blobs, d.Hex()), []byte(s), 0o444); err != nil {
			t.Fatal(err)
		}
		return d
	}
	file := func(p, s string, exec bool) capsule.Entry {
		return capsule.Entry{Path: p, Type: capsule.TypeFile, Size: int64(len(s)), Blob: blob(s), Exec: exec}
	}
	from := &capsule.Snapshot{Version: capsule.SnapshotVersion, Entries: []capsule.Entry{file("linked", "old linked", false), file("own", "old own", false)}}
	to := &capsule.Snapshot{Version: capsule.SnapshotVersion, Entries: []capsule.Entry{file("linked", "new linked", false), file("own", "new own bytes", true)}}
	for _, e := range from.Entries {
		if err := os.WriteFile(filepath.Join(work, e.Path), []byte("old "+e.Path), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(root, "other-link")
	if err := os.Link(filepath.Join(work, "linked"), other); err != nil {
		t.Fatal(err)
	}
	ino := func(p string) uint64 {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := InodeOf(fi)
		return n
	}
	ownBefore := ino(filepath.Join(work, "own"))
	var b Batch
	if err := Checkout(vfs.OS{}, Folder{Dir: blobs}, work, from, to, &b); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"work/own": "new own bytes", "work/linked": "new linked", "other-link": "old linked"} {
		if got, _ := os.ReadFile(filepath.Join(root, p)); string(got) != want {
			t.Errorf("%s holds %q, want %q", p, got, want)
		}
	}
	if got := ino(filepath.Join(work, "own")); got != ownBefore {
		t.Errorf("own: inode %d, was %d: not written in place", got, ownBefore)
	}
	if fi, _ := os.Lstat(filepath.Join(work, "own")); fi.Mode().Perm() != 0o755 {
		t.Errorf("own: mode %v, want 0755", fi.Mode())
	}
	if ino(filepath.Join(work, "linked")) == ino(other) {
		t.Error("linked was written through its other link")
	}
	if len(b.files) != 2 {
		t.Errorf("batch syncs %v, want both files", b.files)
	}
	if !b.dirs[filepath.Clean(work)] {
		t.Error("the replaced file's directory is not noted for a sync")
	}
}
