package capsule

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// benchCapsule returns a capsule whose snapshot holds n files of size
// random bytes (seed 1), built once per benchmark.
func benchCapsule(b *testing.B, n, size int) string {
	b.Helper()
	ws := filepath.Join(b.TempDir(), "ws")
	rng := rand.NewChaCha8([32]byte{1})
	buf := make([]byte, size)
	for i := range n {
		rng.Read(buf)
		p := filepath.Join(ws, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%05d", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Clone(buf), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	c, err := Init(vfs.OS{}, filepath.Join(b.TempDir(), "cap"), InitConfig{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.SnapshotFrom(ws, SnapshotConfig{}); err != nil {
		b.Fatal(err)
	}
	return c.Dir()
}

// BenchmarkVerify measures Verify over many small blobs and one large one;
// bench/verify.sh compares the same work with openssl and sha256sum.
func BenchmarkVerify(b *testing.B) {
	for _, bc := range []struct{ n, size int }{{1000, 100 << 10}, {1, 64 << 20}} {
		b.Run(fmt.Sprintf("%dx%dKiB", bc.n, bc.size>>10), func(b *testing.B) {
			dir := benchCapsule(b, bc.n, bc.size)
			b.SetBytes(int64(bc.n * bc.size))
			b.ResetTimer()
			for range b.N {
				r, err := Verify(vfs.OS{}, dir, VerifyOptions{})
				if err != nil || !r.OK() {
					b.Fatal(err, r.Problems)
				}
			}
		})
	}
}

// BenchmarkSnapshot measures recording an unchanged workspace again (hash
// only, no blob copied) and a fresh one.
func BenchmarkSnapshot(b *testing.B) {
	dir := benchCapsule(b, 500, 100<<10)
	c, err := Open(vfs.OS{}, dir, Config{})
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "ws")
	if _, err := c.Checkout(out, CheckoutConfig{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(500 * 100 << 10)
	b.ResetTimer()
	for range b.N {
		if _, err := c.SnapshotFrom(out, SnapshotConfig{}); err != nil {
			b.Fatal(err)
		}
	}
}
