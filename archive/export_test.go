package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// listing describes every header of a tar stream, one line each, with all
// the fields FORMAT §8.2 fixes.
func listing(t *testing.T, archive []byte) string {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(archive))
	var b strings.Builder
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read back: %v", err)
		}
		fmt.Fprintf(&b, "%c %04o uid=%d gid=%d uname=%q gname=%q mtime=%d size=%d format=%v pax=%d %s\n",
			h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.Unix(), h.Size, h.Format, len(h.PAXRecords), h.Name)
	}
	return b.String()
}

func unzstd(t *testing.T, b []byte) []byte {
	t.Helper()
	d, err := zstd.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out, err := io.ReadAll(d)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExportGolden pins the archive bytes (FORMAT §8): a change to entry
// order, metadata or compression shows up as a diff of testdata/export.golden.
func TestExportGolden(t *testing.T) {
	mem := memWith(t)
	plain := exportBytes(t, mem, "/src", ExportConfig{})
	zst := exportBytes(t, mem, "/src", ExportConfig{Compression: Zstd})
	if !bytes.Equal(unzstd(t, zst), plain) {
		t.Fatal("the zstd export does not decompress to the plain export")
	}
	got := listing(t, plain) + fmt.Sprintf("\ntar  %s %d bytes\nzstd %s %d bytes\n",
		digest.FromBytes(plain), len(plain), digest.FromBytes(zst), len(zst))
	golden := filepath.Join("testdata", "export.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./archive -run TestExportGolden -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("export differs from %s (-want +got):\n%s", golden, diff)
	}
}

// TestExportDeterministic: the same capsule gives the same bytes, whatever
// the order its files were written in, the file system, or the run.
func TestExportDeterministic(t *testing.T) {
	for _, comp := range []Compression{None, Zstd} {
		t.Run(comp.String(), func(t *testing.T) {
			a := vfs.NewMem()
			writeCapsule(t, a, "/a", fixtureFiles(), false)
			b := vfs.NewMem()
			writeCapsule(t, b, "/deep/b", fixtureFiles(), true)
			osDir := filepath.Join(t.TempDir(), "c")
			writeCapsule(t, vfs.OS{}, osDir, fixtureFiles(), true)
			if err := os.Chmod(filepath.Join(osDir, "memory", "working_memory.md"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := ExportConfig{Compression: comp}
			first := exportBytes(t, a, "/a", cfg)
			for name, got := range map[string][]byte{
				"same folder again": exportBytes(t, a, "/a", cfg),
				"reverse order":     exportBytes(t, b, "/deep/b", cfg),
				"OS, other modes":   exportBytes(t, vfs.OS{}, osDir, cfg),
			} {
				if !bytes.Equal(first, got) {
					t.Errorf("%s: export differs (%d vs %d bytes)", name, len(first), len(got))
				}
			}
		})
	}
}

// TestGNUTarReadsExport checks the export with the real GNU tar: `tar tf`
// lists the seed layout plainly and `tar xf` gives back the folder.
func TestGNUTarReadsExport(t *testing.T) {
	tarBin := needTool(t, "tar")
	src := filepath.Join(t.TempDir(), "src")
	writeCapsule(t, vfs.OS{}, src, fixtureFiles(), false)
	for _, comp := range []Compression{None, Zstd} {
		t.Run(comp.String(), func(t *testing.T) {
			if comp == Zstd {
				needTool(t, "zstd")
			}
			out := filepath.Join(t.TempDir(), "agent.capsule.tar")
			if comp == Zstd {
				out += ".zst"
			}
			if _, err := ExportFile(vfs.OS{}, src, out, ExportConfig{Compression: comp}); err != nil {
				t.Fatal(err)
			}
			var z []string
			if comp == Zstd {
				z = []string{"--zstd"}
			}
			list := strings.Fields(string(runTool(t, tarBin, append(z, "-tf", out)...)))
			want := []string{
				"artifacts/", "artifacts/blobs/", "artifacts/blobs/" + digest.FromString("package main\n\nfunc main() {}\n").Hex(),
				"artifacts/snapshot.json", "environment/", "environment/spec.json", "manifest.json",
				"memory/", "memory/timeline_events.jsonl", "memory/vector_index/", "memory/vector_index/index.json",
				"memory/working_memory.md",
			}
			if diff := cmp.Diff(want, list); diff != "" {
				t.Errorf("tar tf (-want +got):\n%s", diff)
			}
			dst := t.TempDir()
			runTool(t, tarBin, append(z, "-C", dst, "-xf", out)...)
			runTool(t, needTool(t, "diff"), "-r", src, dst)
		})
	}
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not found on PATH (.ci/run installs it): %v", name, err)
	}
	return p
}

func runTool(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// TestExportLeavesOut: a stale signature, crash leftovers and what Skip
// rejects stay out of the archive; a symlink in the folder is refused.
func TestExportLeavesOut(t *testing.T) {
	mem := memWith(t)
	want := exportBytes(t, mem, "/src", ExportConfig{})
	for _, p := range []string{"/src/manifest.json.sig", "/src/memory/.tmp-working_memory.md-7", "/src/node.lock"} {
		if err := vfs.WriteFile(mem, p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := exportBytes(t, mem, "/src", ExportConfig{Skip: func(name string) bool { return name == "node.lock" }})
	if !bytes.Equal(got, want) {
		t.Errorf("export with leftovers differs:\n%s", cmp.Diff(listing(t, want), listing(t, got)))
	}
	if err := mem.Symlink("/etc/passwd", "/src/memory/link"); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(mem, "/src", io.Discard, ExportConfig{}); !errors.Is(err, ErrSource) || !strings.Contains(err.Error(), "memory/link") {
		t.Errorf("symlink in folder: err = %v, want ErrSource naming memory/link", err)
	}
}

func TestExportNoManifest(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(mem, "/empty", io.Discard, ExportConfig{}); !errors.Is(err, ErrNoManifest) {
		t.Errorf("err = %v, want ErrNoManifest", err)
	}
}

// TestExportSignAndCheck: Sign sees the exact manifest bytes and its result
// lands right after manifest.json; Check sees every file's digest and can
// abort the export, leaving no output file.
func TestExportSignAndCheck(t *testing.T) {
	mem := memWith(t)
	manifest, err := vfs.ReadFile(mem, "/src/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]digest.Digest{}
	res, err := ExportFile(mem, "/src", "/out.capsule.tar", ExportConfig{
		Sign: func(m []byte) ([]byte, error) {
			if !bytes.Equal(m, manifest) {
				t.Errorf("Sign got %q, want the manifest bytes", m)
			}
			return []byte("SIG"), nil
		},
		Check: func(name string, size int64, d digest.Digest) error { checked[name] = d; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Signed || res.Manifest != digest.FromBytes(manifest) {
		t.Errorf("result = %+v", res)
	}
	out, err := vfs.ReadFile(mem, "/out.capsule.tar")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(listing(t, out), "\n")
	var names []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 {
			names = append(names, f[len(f)-1])
		}
	}
	i := indexOf(names, ManifestName)
	if i < 0 || i+1 >= len(names) || names[i+1] != SignatureName {
		t.Errorf("entries %v: want %s right after %s", names, SignatureName, ManifestName)
	}
	wantChecked := map[string]digest.Digest{ManifestName: digest.FromBytes(manifest), SignatureName: digest.FromString("SIG")}
	for p, data := range fixtureFiles() {
		wantChecked[p] = digest.FromString(data)
	}
	if diff := cmp.Diff(wantChecked, checked); diff != "" {
		t.Errorf("Check calls (-want +got):\n%s", diff)
	}

	boom := errors.New("digest differs from the manifest")
	_, err = ExportFile(mem, "/src", "/bad.capsule.tar", ExportConfig{
		Check: func(name string, size int64, d digest.Digest) error { return boom },
	})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the Check error", err)
	}
	if _, err := mem.Stat("/bad.capsule.tar"); err == nil {
		t.Error("a failed export left its output file")
	}
	if leftovers := tempFiles(t, mem, "/"); len(leftovers) > 0 {
		t.Errorf("a failed export left temporary files: %v", leftovers)
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func tempFiles(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), vfs.TempPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestExportFileRefusesOutputInside(t *testing.T) {
	mem := memWith(t)
	if _, err := ExportFile(mem, "/src", "/src/memory/x.capsule.tar", ExportConfig{}); err == nil || !strings.Contains(err.Error(), "inside the capsule folder") {
		t.Errorf("err = %v, want an output-inside-folder error", err)
	}
}

// TestExportLongNames: a name ustar cannot hold gets a pax extended header,
// which GNU tar and Import both read. No name of the layout needs one (a
// blob's is 80 bytes), so Import refuses the long name, naming it in full
// as the pax header gives it.
func TestExportLongNames(t *testing.T) {
	files := fixtureFiles()
	long := "memory/" + strings.Repeat("n", 120) + "/" + strings.Repeat("x", 110) + ".md" // no ustar prefix split fits
	files[long] = "deep\n"
	mem := vfs.NewMem()
	writeCapsule(t, mem, "/src", files, false)
	archive := exportBytes(t, mem, "/src", ExportConfig{})
	if l := listing(t, archive); !strings.Contains(l, "pax=1 "+long+"\n") {
		t.Errorf("no pax header for the long name:\n%s", l)
	}
	_, err := importBytes(mem, archive, "/dst", ImportConfig{})
	if dir := path.Dir(long) + "/"; !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("import: %v, want ErrLayout naming %s", err, dir)
	}
	p := filepath.Join(t.TempDir(), "long.tar")
	if err := os.WriteFile(p, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	if list := string(runTool(t, needTool(t, "tar"), "-tf", p)); !strings.Contains(list, long+"\n") {
		t.Errorf("GNU tar does not list %s:\n%s", long, list)
	}
}

// shrinkingFS reports every file one byte longer than it is, as a file
// truncated between Stat and read would look.
type shrinkingFS struct{ vfs.FS }

func (s shrinkingFS) Open(name string) (vfs.File, error) {
	f, err := s.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return shrinkingFile{f}, nil
}

type shrinkingFile struct{ vfs.File }

func (f shrinkingFile) Stat() (fs.FileInfo, error) {
	info, err := f.File.Stat()
	return biggerInfo{info}, err
}

type biggerInfo struct{ fs.FileInfo }

func (b biggerInfo) Size() int64 { return b.FileInfo.Size() + 1 }

func TestExportDetectsChange(t *testing.T) {
	mem := memWith(t)
	_, err := Export(shrinkingFS{mem}, "/src", io.Discard, ExportConfig{})
	if !errors.Is(err, ErrChanged) {
		t.Errorf("err = %v, want ErrChanged", err)
	}
}

// TestExportFileCrash: after a crash at any durable step of ExportFile the
// output is absent or the complete archive.
func TestExportFileCrash(t *testing.T) {
	want := exportBytes(t, memWith(t), "/src", ExportConfig{})
	setup := func(t testing.TB, fsys vfs.FS) { writeCapsule(t, fsys, "/src", fixtureFiles(), false) }
	op := func(fsys vfs.FS) error {
		_, err := ExportFile(fsys, "/src", "/agent.capsule.tar", ExportConfig{})
		return err
	}
	vfstest.ForEachCrashPoint(t, setup, op, func(t *testing.T, fsys vfs.FS, at vfstest.CrashPoint) {
		got, err := vfs.ReadFile(fsys, "/agent.capsule.tar")
		switch {
		case err != nil && at.Done():
			t.Fatalf("%v: the export finished but its file is missing: %v", at, err)
		case err == nil && !bytes.Equal(got, want):
			t.Fatalf("%v: the archive holds %d bytes, not the complete %d", at, len(got), len(want))
		}
	})
}
