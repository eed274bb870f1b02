package capsule

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/par"
	"github.com/agentcapsule/capsule/vfs"
)

// pairSizes mix files around a block, the lane buffer and the mapping
// threshold, so that lanes end at every offset against each other.
var pairSizes = []int{0, 1, 63, 64, 65, 100 << 10, pairBufSize - 1, pairBufSize, pairBufSize + 1,
	2*pairBufSize + 5, pipelineMin - 1, pipelineMin, pipelineMin + 1, 127, 3 << 10, 100<<10 + 1}

// pairBufSize is the lane buffer on Linux; elsewhere any size will do.
const pairBufSize = 256 << 10

type countProgress struct{ n atomic.Int64 }

func (c *countProgress) Add(n int64) { c.n.Add(n) }

// writeTargets writes one file of every size (seeded random bytes) and
// one missing name, returning the targets and each file's digest.
func writeTargets(t *testing.T, fsys vfs.FS, dir string, sizes []int) ([]hashTarget, []digest.Digest, int64) {
	t.Helper()
	var ts []hashTarget
	var want []digest.Digest
	var total int64
	rng := rand.NewChaCha8([32]byte{7})
	for k, n := range sizes {
		b := make([]byte, n)
		rng.Read(b)
		name := filepath.Join(dir, "f"+string(rune('a'+k)))
		if err := vfs.WriteFile(fsys, name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ts = append(ts, hashTarget{name: name, size: int64(n)})
		want = append(want, digest.FromBytes(b))
		total += int64(n)
	}
	ts = append(ts, hashTarget{name: filepath.Join(dir, "missing"), size: 10})
	return ts, append(want, ""), total
}

// hashFiles reports every file once with crypto/sha256's digest and its
// size (a missing one as an error), whatever the number of workers and
// whether or not the sizes are known, and reports every byte to Progress
// once.
func TestHashFilesMatchesSHA256(t *testing.T) {
	for _, fsys := range []struct {
		name string
		fs   vfs.FS
		dir  string
	}{{"os", vfs.OS{}, t.TempDir()}, {"mem", vfs.NewMem(), "/d"}} {
		if err := fsys.fs.MkdirAll(fsys.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ts, want, total := writeTargets(t, fsys.fs, fsys.dir, pairSizes)
		for _, w := range []int{1, 2, 3} {
			for _, unknown := range []bool{false, true} {
				run := append([]hashTarget(nil), ts...)
				if unknown {
					for i := range run {
						run[i].size = -1
					}
				}
				checkHashFiles(t, fsys.name, fsys.fs, run, want, total, w)
			}
		}
	}
}

func checkHashFiles(t *testing.T, label string, fsys vfs.FS, ts []hashTarget, want []digest.Digest, total int64, w int) {
	t.Helper()
	var mu sync.Mutex
	calls := make([]int, len(ts))
	var p countProgress
	hashFiles(fsys, hashSlice(ts), w, &p, func(i int, d digest.Digest, n int64, err error) {
		mu.Lock()
		defer mu.Unlock()
		calls[i]++
		switch {
		case want[i] == "" && err == nil:
			t.Errorf("%s w=%d: %s: no error for a missing file", label, w, ts[i].name)
		case want[i] != "" && (err != nil || d != want[i] || n != int64(pairSizes[i])):
			t.Errorf("%s w=%d size %d: got %s %d %v, want %s", label, w, pairSizes[i], d.Short(), n, err, want[i].Short())
		}
	})
	for i, c := range calls {
		if c != 1 {
			t.Errorf("%s w=%d: file %d reported %d times, want once", label, w, i, c)
		}
	}
	if p.n.Load() != total {
		t.Errorf("%s w=%d: progress %d bytes, want %d", label, w, p.n.Load(), total)
	}
}

// BenchmarkHashFiles hashes 1,000 files of 100 KiB through hashFiles
// (two files per core at once where the CPU can) and one at a time with
// hashFile, as verify did before.
func BenchmarkHashFiles(b *testing.B) {
	dir := b.TempDir()
	buf := make([]byte, 100<<10)
	rng := rand.NewChaCha8([32]byte{9})
	var ts []hashTarget
	for i := range 1000 {
		rng.Read(buf)
		name := filepath.Join(dir, "f"+strconv.Itoa(i))
		if err := os.WriteFile(name, buf, 0o644); err != nil {
			b.Fatal(err)
		}
		ts = append(ts, hashTarget{name: name, size: int64(len(buf))})
	}
	b.Run("paired", func(b *testing.B) {
		b.SetBytes(int64(len(ts) * len(buf)))
		for range b.N {
			hashFiles(vfs.OS{}, hashSlice(ts), 0, nil, func(int, digest.Digest, int64, error) {})
		}
	})
	b.Run("single", func(b *testing.B) {
		b.SetBytes(int64(len(ts) * len(buf)))
		for range b.N {
			par.Do(len(ts), workers(0), func(i int) { hashFile(vfs.OS{}, ts[i].name, ts[i].size, nil) })
		}
	})
}
