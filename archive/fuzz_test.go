package archive

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// fuzzLimits keep each fuzz run small.
var fuzzLimits = Limits{MaxTotal: 1 << 20, MaxEntries: 64, MaxWindow: 1 << 20}

// FuzzImport feeds arbitrary bytes to Import and Verify. Whatever the input:
// neither panics; a refused import leaves nothing behind; an accepted one
// leaves exactly the destination, which verifies; Verify agrees with Import
// and cleans up after itself. The seed corpus in testdata/fuzz/FuzzImport
// holds real capsule archives (plain, zstd, signed) and hostile ones;
// regenerate it with `go test ./archive -run TestFuzzCorpus -update`.
func FuzzImport(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := vfs.NewMem()
		for _, d := range []string{"/dst", "/tmp"} {
			if err := mem.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		_, importErr := Import(mem, bytes.NewReader(data), "/dst/agent", ImportConfig{Verify: testVerify, Limits: fuzzLimits})
		names := entriesOf(t, mem, "/dst")
		switch {
		case importErr != nil && len(names) != 0:
			t.Fatalf("refused import (%v) left %v", importErr, names)
		case importErr == nil && (len(names) != 1 || names[0] != "agent"):
			t.Fatalf("accepted import left %v, want only agent", names)
		case importErr == nil:
			if problems, err := testVerify(mem, "/dst/agent"); err != nil || len(problems) > 0 {
				t.Fatalf("accepted import does not verify: %v %v", problems, err)
			}
		}
		rep, err := VerifyReader(mem, bytes.NewReader(data), VerifyConfig{Verify: testVerify, TempDir: "/tmp", Limits: fuzzLimits})
		if err != nil {
			t.Fatalf("Verify failed to run: %v", err)
		}
		if rep.OK() != (importErr == nil) {
			t.Fatalf("Verify OK = %v but Import err = %v; problems: %v", rep.OK(), importErr, rep.Problems)
		}
		if left := entriesOf(t, mem, "/tmp"); len(left) > 0 {
			t.Fatalf("Verify left %v", left)
		}
	})
}

// TestFuzzCorpus keeps testdata/fuzz/FuzzImport in step with the builders
// of this package's tests: with -update it rewrites the seeds; without, it
// checks that each seed file is present.
func TestFuzzCorpus(t *testing.T) {
	seeds := fuzzSeeds(t)
	dir := filepath.Join("testdata", "fuzz", "FuzzImport")
	for name, data := range seeds {
		p := filepath.Join(dir, name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("seed %s is missing (run go test ./archive -run TestFuzzCorpus -update): %v", p, err)
		}
	}
}

func fuzzSeeds(t *testing.T) map[string][]byte {
	mem := memWith(t)
	m := file("manifest.json", "{}\n")
	return map[string][]byte{
		"capsule-tar":        exportBytes(t, mem, "/src", ExportConfig{}),
		"capsule-tar-zst":    exportBytes(t, mem, "/src", ExportConfig{Compression: Zstd}),
		"capsule-signed-tar": exportBytes(t, mem, "/src", ExportConfig{Sign: signWith(testSigner(t, 1))}),
		"traversal":          tarOf(t, m, file("../x", "evil")),
		"symlink":            tarOf(t, m, tarEntry{hdr: tarHeaderSymlink("memory", "/etc")}),
		"duplicate":          tarOf(t, m, file("memory/a", "1"), file("memory/a", "2")),
		"case-collision":     tarOf(t, m, file("Manifest.json", "x")),
		"gnu-sparse":         gnuSparse10GB(),
		"pax-sparse":         paxSparse10GB(),
		"huge-window":        zstdHugeWindow(),
		"truncated":          tarOf(t, m, file("memory/a", "x"))[:512*4],
	}
}
