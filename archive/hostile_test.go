package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// hostileCase is one archive Import must refuse (FORMAT §9).
type hostileCase struct {
	name    string
	archive func(t *testing.T) io.Reader
	limits  Limits
	wantErr error
	wantMsg string // a substring of the error: usually the entry's name
}

func bytesOf(b []byte) func(*testing.T) io.Reader {
	return func(*testing.T) io.Reader { return bytes.NewReader(b) }
}

func tarCase(entries ...tarEntry) func(*testing.T) io.Reader {
	return func(t *testing.T) io.Reader { return bytes.NewReader(tarOf(t, entries...)) }
}

func hostileCases() []hostileCase {
	m := file("manifest.json", "{}\n")
	const wm, snap = "memory/working_memory.md", "artifacts/snapshot.json"
	return []hostileCase{
		{name: "parent traversal", archive: tarCase(m, file("../x", "evil")), wantErr: ErrUnsafePath, wantMsg: `"../x"`},
		{name: "inner traversal", archive: tarCase(m, file("a/../../x", "evil")), wantErr: ErrUnsafePath, wantMsg: `"a/../../x"`},
		{name: "dot-dot directory", archive: tarCase(dir("a/.."), m), wantErr: ErrUnsafePath, wantMsg: `"a/.."`},
		{name: "absolute path", archive: tarCase(m, file("/etc/cron.d/x", "evil")), wantErr: ErrUnsafePath, wantMsg: `"/etc/cron.d/x": absolute path`},
		{name: "absolute root directory", archive: tarCase(dir("/"), m), wantErr: ErrUnsafePath, wantMsg: `entry 0 "/": absolute path`},
		{name: "backslash", archive: tarCase(m, file(`..\x`, "evil")), wantErr: ErrUnsafePath, wantMsg: `..\\x`},
		{name: "drive letter", archive: tarCase(m, file(`C:x`, "evil")), wantErr: ErrUnsafePath, wantMsg: `C:x`},
		{name: "control character", archive: tarCase(m, file("a\x1bb", "x")), wantErr: ErrUnsafePath, wantMsg: `a\x1bb`},
		{name: "empty component", archive: tarCase(m, file("memory//x", "x")), wantErr: ErrUnsafePath, wantMsg: `memory//x`},
		{name: "symlink", archive: tarCase(m, tarEntry{hdr: tar.Header{Name: "memory", Typeflag: tar.TypeSymlink, Linkname: "/etc"}}),
			wantErr: ErrEntryType, wantMsg: `"memory": symbolic link to "/etc"`},
		{name: "symlink escape then write through it", archive: tarCase(
			tarEntry{hdr: tar.Header{Name: "esc", Typeflag: tar.TypeSymlink, Linkname: "../../outside"}}, file("esc/x", "evil")),
			wantErr: ErrEntryType, wantMsg: `"esc"`},
		{name: "hard link", archive: tarCase(m, tarEntry{hdr: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "manifest.json"}}),
			wantErr: ErrEntryType, wantMsg: `"h": hard link`},
		{name: "char device", archive: tarCase(m, tarEntry{hdr: tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}),
			wantErr: ErrEntryType, wantMsg: `"null": device node`},
		{name: "block device", archive: tarCase(m, tarEntry{hdr: tar.Header{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8}}),
			wantErr: ErrEntryType, wantMsg: `"sda": device node`},
		{name: "fifo", archive: tarCase(m, tarEntry{hdr: tar.Header{Name: "p", Typeflag: tar.TypeFifo}}),
			wantErr: ErrEntryType, wantMsg: `"p": fifo`},
		{name: "global header", archive: tarCase(tarEntry{hdr: tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "x"}}}, m),
			wantErr: ErrEntryType, wantMsg: "PAX global header"},
		{name: "duplicate file", archive: tarCase(m, file(wm, "1"), file(wm, "2")), wantErr: ErrDuplicate, wantMsg: `"` + wm + `"`},
		{name: "duplicate via ./", archive: tarCase(m, file("./manifest.json", "x")), wantErr: ErrDuplicate, wantMsg: `"./manifest.json"`},
		{name: "duplicate directory", archive: tarCase(dir("memory/"), dir("memory/")), wantErr: ErrDuplicate, wantMsg: `"memory/"`},
		{name: "names differ by case", archive: tarCase(m, file("Manifest.json", "x")), wantErr: ErrCaseCollision, wantMsg: `"Manifest.json"`},
		{name: "parent differs by case", archive: tarCase(file(wm, "1"), file("Memory/b", "2")), wantErr: ErrCaseCollision, wantMsg: `"Memory/b"`},
		{name: "file where a directory is needed", archive: tarCase(file(snap, "x"), file(snap+"/a", "1")), wantErr: ErrConflict, wantMsg: `"` + snap + `/a"`},
		{name: "directory over a file", archive: tarCase(file(snap, "x"), dir(snap+"/")), wantErr: ErrDuplicate, wantMsg: `"` + snap + `/"`},
		{name: "file outside the layout", archive: tarCase(m, file("evil.sh", "rm -rf /")), wantErr: ErrLayout, wantMsg: `"evil.sh": file not in the layout`},
		{name: "directory outside the layout", archive: tarCase(m, dir("memory/extra/")), wantErr: ErrLayout, wantMsg: `"memory/extra/": directory not in the layout`},
		{name: "file where a layout directory is", archive: tarCase(file("memory", "x")), wantErr: ErrLayout, wantMsg: `"memory": memory must be a directory`},
		{name: "blob not named by a digest", archive: tarCase(file("artifacts/blobs/notahash", "x")), wantErr: ErrLayout, wantMsg: `"artifacts/blobs/notahash"`},
		{name: "temporary file", archive: tarCase(file("memory/.tmp-working_memory.md-1", "x")), wantErr: ErrLayout, wantMsg: `.tmp-`},
		{name: "commit staging", archive: tarCase(file(".commit/manifest.json", "{}")), wantErr: ErrLayout, wantMsg: `".commit/manifest.json"`},
		{name: "1 GiB outside the layout in a zstd bomb", archive: func(t *testing.T) io.Reader {
			return zstdBomb(t, rawHeader("memory/bomb", '0', 1<<30, nil), []byte{0}, 1<<30)
		}, wantErr: ErrLayout, wantMsg: `"memory/bomb": file not in the layout`},
		{name: "truncated in data", archive: func(t *testing.T) io.Reader {
			b := tarOf(t, m, file(wm, strings.Repeat("x", 3000)))
			return bytes.NewReader(b[:512*3+700])
		}, wantErr: ErrCorrupt, wantMsg: "ends early"},
		{name: "truncated at entry boundary", archive: func(t *testing.T) io.Reader {
			b := tarOf(t, m, file(wm, "x"))
			return bytes.NewReader(b[:512*4])
		}, wantErr: ErrCorrupt, wantMsg: "without the end-of-archive marker"},
		{name: "truncated zstd", archive: func(t *testing.T) io.Reader {
			z := zstdOf(t, tarOf(t, m, file(wm, strings.Repeat("abc", 5000))))
			return bytes.NewReader(z[:len(z)/2])
		}, wantErr: ErrCorrupt},
		{name: "empty stream", archive: bytesOf(nil), wantErr: ErrCorrupt},
		{name: "garbage", archive: bytesOf(bytes.Repeat([]byte("not a tar "), 100)), wantErr: ErrCorrupt},
		{name: "gzip", archive: func(t *testing.T) io.Reader {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(tarOf(t, m))
			zw.Close()
			return &b
		}, wantErr: ErrCompression, wantMsg: "gzip"},
		{name: "entry over 100 GiB in a zstd bomb", archive: func(t *testing.T) io.Reader {
			hdr := rawHeader("memory/bomb", '0', 100<<30, nil)
			return zstdBomb(t, hdr, []byte{0}, 100<<30)
		}, wantErr: ErrLimit, wantMsg: `"memory/bomb": entry is 107374182400 bytes`},
		{name: "100 GiB of PAX headers in a zstd bomb", archive: func(t *testing.T) io.Reader {
			return zstdBomb(t, nil, paxHeader([2]string{"comment", strings.Repeat("z", 400)}), 100<<30)
		}, limits: Limits{MaxTotal: 1 << 20, MaxEntries: 16}, wantErr: ErrLimit, wantMsg: "decompressed stream is over"},
		{name: "zstd window of 1 GiB", archive: bytesOf(zstdHugeWindow()), wantErr: ErrLimit, wantMsg: "zstd"},
		{name: "old GNU sparse claiming 10 GB", archive: bytesOf(gnuSparse10GB()), wantErr: ErrEntryType, wantMsg: `"big.bin": sparse file (claims 10000000000 bytes)`},
		{name: "PAX sparse claiming 10 GB", archive: bytesOf(paxSparse10GB()), wantErr: ErrEntryType, wantMsg: `"big.bin": sparse file (claims 10000000000 bytes)`},
		{name: "too many entries", archive: tarCase(m, file(wm, "1"), file(snap, "2"), file("environment/spec.json", "3")),
			limits: Limits{MaxEntries: 3}, wantErr: ErrLimit, wantMsg: `entry 3 "environment/spec.json": more than 3 entries`},
		{name: "oversized total", archive: tarCase(file(wm, strings.Repeat("x", 600)), file(snap, strings.Repeat("y", 600))),
			limits: Limits{MaxTotal: 1000}, wantErr: ErrLimit, wantMsg: `"` + snap + `": entries total more than 1000 bytes`},
		{name: "oversized entry", archive: tarCase(file("a", strings.Repeat("x", 600))),
			limits: Limits{MaxEntrySize: 500}, wantErr: ErrLimit, wantMsg: `"a": entry is 600 bytes, limit 500`},
		{name: "path too long", archive: tarCase(file(strings.Repeat("d/", 40)+"x", "1")),
			limits: Limits{MaxPathLen: 64}, wantErr: ErrLimit, wantMsg: "limit 64"},
		{name: "component too long", archive: tarCase(file(strings.Repeat("n", 256), "1")), wantErr: ErrLimit, wantMsg: "component is 256 bytes"},
	}
}

// TestImportRefusesHostileArchives: every hostile archive is refused with a
// message naming the entry, nothing is written outside the staging folder,
// and the staging folder is gone afterwards.
func TestImportRefusesHostileArchives(t *testing.T) {
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			mustWrite(t, mem, "/outside/keep", "keep")
			if err := mem.MkdirAll("/dst", 0o755); err != nil {
				t.Fatal(err)
			}
			before := vfstest.Snapshot(t, mem, "/")
			fsys := vfs.NewFaulty(mem)
			_, err := Import(fsys, tc.archive(t), "/dst/agent", ImportConfig{Verify: testVerify, Limits: tc.limits})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q, want it to contain %q", err, tc.wantMsg)
			}
			if diff := cmp.Diff(before, vfstest.Snapshot(t, mem, "/")); diff != "" {
				t.Errorf("the refused import left changes (-before +after):\n%s", diff)
			}
			for _, rec := range fsys.Ops() {
				if writes(rec.Op) && !strings.HasPrefix(rec.Path, "/dst/"+StagingPrefix) {
					t.Errorf("%v touched %s, outside the staging folder", rec.Op, rec.Path)
				}
			}
		})
	}
}

func writes(op vfs.Op) bool {
	switch op {
	case vfs.OpCreate, vfs.OpWrite, vfs.OpMkdir, vfs.OpRename, vfs.OpRemove, vfs.OpSymlink, vfs.OpChmod, vfs.OpTruncate:
		return true
	}
	return false
}

// TestSparseRefusedBeforeAllocation: a header claiming 10 GB costs no more
// memory than the fixed buffers of an import.
func TestSparseRefusedBeforeAllocation(t *testing.T) {
	for name, archive := range map[string][]byte{"gnu": gnuSparse10GB(), "pax": paxSparse10GB()} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Import(vfs.NewMem(), bytes.NewReader(archive), "/agent", ImportConfig{Verify: testVerify})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrEntryType) {
				t.Fatalf("err = %v, want ErrEntryType", err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
				t.Errorf("import allocated %d bytes, want under 8 MiB", got)
			}
		})
	}
}

// TestBombStopsEarly: the PAX-header bomb is read only up to the stream
// limit, not to its 100 GiB end.
func TestBombStopsEarly(t *testing.T) {
	r := zstdBomb(t, nil, paxHeader([2]string{"comment", strings.Repeat("z", 400)}), 100<<30)
	counted := &countReader{r: r}
	_, err := Import(vfs.NewMem(), counted, "/agent", ImportConfig{Verify: testVerify, Limits: Limits{MaxTotal: 1 << 20, MaxEntries: 16}})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v, want ErrLimit", err)
	}
	if counted.n > 8<<20 {
		t.Errorf("read %d compressed bytes of the bomb, want a few MiB at most", counted.n)
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
