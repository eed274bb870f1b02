package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// TestLayoutRefusedFromHeader (FORMAT §9.1): an entry the layout does not
// allow is refused from its header: a 1 GiB body is neither written nor
// decompressed, and no file is created at all.
func TestLayoutRefusedFromHeader(t *testing.T) {
	for name, hdr := range map[string][]byte{
		"outside the layout": rawHeader("memory/bomb", '0', 1<<30, nil),
		"temporary file":     rawHeader("memory/.tmp-working_memory.md-1", '0', 1<<30, nil),
		"blob not a digest":  rawHeader("artifacts/blobs/bomb", '0', 1<<30, nil),
	} {
		t.Run(name, func(t *testing.T) {
			mem := vfs.NewMem()
			if err := mem.MkdirAll("/dst", 0o755); err != nil {
				t.Fatal(err)
			}
			before := vfstest.Snapshot(t, mem, "/")
			fsys := vfs.NewFaulty(mem)
			counted := &countReader{r: zstdBomb(t, hdr, []byte{0}, 1<<30)}
			_, err := Import(fsys, counted, "/dst/agent", ImportConfig{Verify: testVerify})
			if !errors.Is(err, ErrLayout) {
				t.Fatalf("err = %v, want ErrLayout", err)
			}
			for _, rec := range fsys.Ops() {
				if rec.Op == vfs.OpCreate || rec.Op == vfs.OpWrite {
					t.Errorf("%v %s: the refused entry was written", rec.Op, rec.Path)
				}
			}
			if counted.n > 1<<20 {
				t.Errorf("read %d compressed bytes, want the header's block only", counted.n)
			}
			if diff := cmp.Diff(before, vfstest.Snapshot(t, mem, "/")); diff != "" {
				t.Errorf("the refused import left changes:\n%s", diff)
			}
		})
	}
}

// tinyEntries is a tar of n one-byte files named by name(i).
func tinyEntries(t testing.TB, n int, name func(int) string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range n {
		if err := tw.WriteHeader(&tar.Header{Name: name(i), Typeflag: tar.TypeReg, Mode: 0o644, Size: 1, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestManyTinyEntriesRefused (issue 10 item 11): 100,000 tiny entries
// outside the layout are refused by Import at the first one, with nothing
// left on disk, and Verify names each without writing any. The times are
// logged, not asserted.
func TestManyTinyEntriesRefused(t *testing.T) {
	const n = 100_000
	archive := tinyEntries(t, n, func(i int) string { return fmt.Sprintf("x/%06d", i) })
	root := t.TempDir()
	start := time.Now()
	_, err := Import(vfs.OS{}, bytes.NewReader(archive), filepath.Join(root, "agent"), ImportConfig{Verify: testVerify})
	t.Logf("Import refused %d tiny entries (%d bytes) in %v", n, len(archive), time.Since(start))
	if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), `entry 0 "x/000000"`) {
		t.Fatalf("err = %v, want ErrLayout at entry 0", err)
	}
	if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
		t.Errorf("left %v (%v), want nothing", ents, err)
	}
	start = time.Now()
	rep, err := VerifyReader(vfs.OS{}, bytes.NewReader(archive), VerifyConfig{Verify: testVerify, TempDir: root})
	t.Logf("Verify reported %d tiny entries in %v", n, time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	layout := 0
	for _, p := range rep.Problems {
		if strings.Contains(p.Detail, "not in the layout") {
			layout++
		}
	}
	if layout != n || rep.Files != 0 {
		t.Errorf("Verify: %d layout problems and %d files written, want %d and 0", layout, rep.Files, n)
	}
	if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
		t.Errorf("Verify left %v (%v), want nothing", ents, err)
	}
}

// blobArchive is a toy capsule of n one-line blobs: the fixture files, n
// blobs, and a manifest listing them all.
func blobArchive(t testing.TB, n int) []byte {
	t.Helper()
	files := fixtureFiles()
	for i := range n {
		body := fmt.Sprintf("%d\n", i)
		files["artifacts/blobs/"+digest.FromString(body).Hex()] = body
	}
	entries := []tarEntry{file(ManifestName, string(manifestFor("test", files)))}
	for p, data := range files {
		entries = append(entries, file(p, data))
	}
	return tarOf(t, entries...)
}

// TestManyBlobsImported (issue 10 item 11): an archive of many tiny blobs
// is imported whole and verified; the time is logged, not asserted
// (CAPSULE_MANY_BLOBS sets the count, default 2,000).
func TestManyBlobsImported(t *testing.T) {
	n := 2_000
	if s := os.Getenv("CAPSULE_MANY_BLOBS"); s != "" {
		fmt.Sscan(s, &n)
	}
	archive := blobArchive(t, n)
	dir := filepath.Join(t.TempDir(), "agent")
	start := time.Now()
	res, err := Import(vfs.OS{}, bytes.NewReader(archive), dir, ImportConfig{Verify: testVerify})
	t.Logf("Import accepted %d blobs (%d bytes) in %v", n, len(archive), time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "artifacts", "blobs"))
	if err != nil || len(ents) != n+1 {
		t.Errorf("%d blobs (%v), want %d", len(ents), err, n+1)
	}
	_ = res
}
