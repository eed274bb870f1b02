//go:build linux

package capsule

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// hashSizes are the edge sizes of the host path: empty, one byte, a
// block, the read buffer and the pipelining threshold, each ±1.
var hashSizes = []int{0, 1, 63, 64, 65, bufSize - 1, bufSize, bufSize + 1,
	pipelineMin - 1, pipelineMin, pipelineMin + 1, 3*bufSize + 7, pipelineMin + 3*bufSize + 7}

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

// The host path (descriptor reads below pipelineMin, pipelined from it) gives
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
	name, want := randomFile(t, t.TempDir(), 2*pipelineMin+5)
	for _, size := range []int64{pipelineMin - 1, pipelineMin, 4 * pipelineMin} {
		got, n, err := hashFile(vfs.OS{}, name, size, nil)
		if err != nil || got != want || n != 2*pipelineMin+5 {
			t.Errorf("told %d: got %s %d %v, want %s", size, got.Short(), n, err, want.Short())
		}
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
