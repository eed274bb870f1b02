package digest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

func random(seed uint64, n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}).Read(b)
	return b
}

func want(b []byte) Digest {
	s := sha256.Sum256(b)
	return Digest(prefix + hex.EncodeToString(s[:]))
}

// Two messages hashed through Blocks2 in steps of every size, then each
// finished with a tail of every length around a block, give the digests
// crypto/sha256 gives them.
func TestBlocks2MatchesSHA256(t *testing.T) {
	t.Logf("block2 in assembly: %v", hasBlock2)
	for _, steps := range [][]int{{}, {1}, {2}, {1, 1, 3}, {17}, {1000, 1}, {4096}} {
		for _, tail := range []int{0, 1, 55, 56, 63, 64, 65, 200} {
			var blocks int
			for _, s := range steps {
				blocks += s
			}
			n := blocks*BlockSize + tail
			a, b := random(1, n), random(2, n+tail)
			x, y := NewLane(), NewLane()
			off := 0
			for _, s := range steps {
				Blocks2(&x, &y, a[off:off+s*BlockSize], b[off:off+s*BlockSize])
				off += s * BlockSize
			}
			if x.Len() != int64(off) || y.Len() != int64(off) {
				t.Fatalf("steps %v: lengths %d %d, want %d", steps, x.Len(), y.Len(), off)
			}
			if got := x.Digest(a[off:]); got != want(a) {
				t.Errorf("steps %v tail %d: lane x %s, want %s", steps, tail, got.Short(), want(a).Short())
			}
			if got := y.Digest(b[off:]); got != want(b) {
				t.Errorf("steps %v tail %d: lane y %s, want %s", steps, 2*tail, got.Short(), want(b).Short())
			}
		}
	}
}

// A lane moved on alone (Lane.Write), in pairs, and through its Hasher
// hashes the concatenation.
func TestLaneMixesPairedAndAlone(t *testing.T) {
	a, b := random(3, 40*BlockSize+9), random(4, 40*BlockSize)
	x, y := NewLane(), NewLane()
	x.Write(a[:3*BlockSize])
	Blocks2(&x, &y, a[3*BlockSize:20*BlockSize], b[:17*BlockSize])
	y.Write(b[17*BlockSize : 30*BlockSize])
	Blocks2(&x, &y, a[20*BlockSize:30*BlockSize], b[30*BlockSize:])
	h := x.Hasher()
	h.Write(a[30*BlockSize:])
	if got := h.Digest(); got != want(a) || h.Size() != int64(len(a)) {
		t.Errorf("x: %s after %d bytes, want %s", got.Short(), h.Size(), want(a).Short())
	}
	if got := y.Digest(nil); got != want(b) {
		t.Errorf("y: %s, want %s", got.Short(), want(b).Short())
	}
}

// Identical messages in both lanes, and the empty message, come out right
// (the lanes share registers in the assembly).
func TestBlocks2SameMessage(t *testing.T) {
	a := bytes.Repeat([]byte{0xa5}, 8*BlockSize)
	x, y := NewLane(), NewLane()
	Blocks2(&x, &y, a, a)
	if x.Digest(nil) != want(a) || y.Digest(nil) != want(a) {
		t.Errorf("same message: %s %s, want %s", x.Digest(nil).Short(), y.Digest(nil).Short(), want(a).Short())
	}
	z := NewLane()
	if z.Digest(nil) != want(nil) {
		t.Errorf("empty: %s, want %s", z.Digest(nil).Short(), want(nil).Short())
	}
}

func TestBlocks2RefusesUnequalOrPartialBlocks(t *testing.T) {
	for _, c := range []struct{ a, b int }{{64, 128}, {65, 65}, {0, 64}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Blocks2 of %d and %d bytes did not panic", c.a, c.b)
				}
			}()
			x, y := NewLane(), NewLane()
			Blocks2(&x, &y, make([]byte, c.a), make([]byte, c.b))
		}()
	}
}

// BenchmarkBlocks2 hashes two 1 MiB messages at once; BenchmarkSHA256 one
// with crypto/sha256. Bytes per second count both messages.
func BenchmarkBlocks2(b *testing.B) {
	p, q := random(5, 1<<20), random(6, 1<<20)
	x, y := NewLane(), NewLane()
	b.SetBytes(2 << 20)
	for range b.N {
		Blocks2(&x, &y, p, q)
	}
}

func BenchmarkSHA256(b *testing.B) {
	p := random(5, 1<<20)
	h := sha256.New()
	b.SetBytes(1 << 20)
	for range b.N {
		h.Write(p)
	}
}
