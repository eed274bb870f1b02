//go:build linux

package capsule

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// hashSizes are the edge sizes of the host path: empty, one byte, the
// read buffer's and the mapping's thresholds and chunks, each ±1.
var hashSizes = []int{0, 1, 63, 64, 65, bufSize - 1, bufSize, bufSize + 1,
	mapMin - 1, mapMin, mapMin + 1, mapChunk - 1, mapChunk, mapChunk + 1, 3*mapChunk + 7}

// randomFile writes n seeded random bytes to a new file and returns its
// path and the digest crypto/sha256 gives them.
func randomFile(t *testing.T, dir string, n int) (string, digest.Digest) {
	t.Helper()
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16)}).Read(b)
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return name, digest.FromBytes(b)
}

// The host path (descriptor reads below mapMin, a mapping from it) gives
// crypto/sha256's digest at every edge size, with the size known or not.
func TestHashFileHostMatchesSHA256(t *testing.T) {
	for _, n := range hashSizes {
		name, want := randomFile(t, t.TempDir(), n)
		for _, size := range []int64{int64(n), -1} {
			got, m, err := hashFile(vfs.OS{}, name, size, nil)
			if err != nil || got != want || m != int64(n) {
				t.Errorf("size %d (told %d): got %s %d %v, want %s", n, size, got.Short(), m, err, want.Short())
			}
		}
	}
}

// A file that grew after its size was taken is hashed to its end, as a
// read would; one told too large a size is hashed as it is.
func TestHashFileHostSizeDiffers(t *testing.T) {
	name, want := randomFile(t, t.TempDir(), 2*mapMin+5)
	for _, size := range []int64{mapMin, 4 * mapMin} {
		got, n, err := hashFile(vfs.OS{}, name, size, nil)
		if err != nil || got != want || n != 2*mapMin+5 {
			t.Errorf("told %d: got %s %d %v, want %s", size, got.Short(), n, err, want.Short())
		}
	}
}

// A mapping whose file shrank faults on reading; hashMapping turns the
// fault into errFault instead of crashing the process.
func TestHashMappingFaultIsAnError(t *testing.T) {
	name, _ := randomFile(t, t.TempDir(), 3*mapChunk)
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 3*mapChunk, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if err := os.Truncate(name, 0); err != nil {
		t.Fatal(err)
	}
	if err := hashMapping(digest.NewHasher(), m, nil); !errors.Is(err, errFault) {
		t.Fatalf("hashMapping of a shrunk file: %v, want errFault", err)
	}
}

// A missing file is an *fs.PathError naming it, as os.Open gives.
func TestHashFileHostMissing(t *testing.T) {
	name := filepath.Join(t.TempDir(), "absent")
	_, _, err := hashFile(vfs.OS{}, name, -1, nil)
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != name || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want a PathError for %s wrapping ErrNotExist", err, name)
	}
}

// BenchmarkHashFileLarge hashes a 64 MiB file mapped (hashFile on the
// host) and read on two goroutines (hashPipelined, the path before).
func BenchmarkHashFileLarge(b *testing.B) {
	dir := b.TempDir()
	name := filepath.Join(dir, "f")
	buf := make([]byte, 64<<20)
	rand.NewChaCha8([32]byte{13}).Read(buf)
	if err := os.WriteFile(name, buf, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("mapped", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for range b.N {
			if _, _, err := hashFile(vfs.OS{}, name, int64(len(buf)), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pipelined", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for range b.N {
			f, err := os.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			_, _, err = hashPipelined(f, nil)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
