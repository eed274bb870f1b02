package capsule

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"math/bits"
	"sync/atomic"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/internal/dirlist"
)

// blobFilter answers "is this blob certainly not in the store?" without a
// system call: a Bloom filter of the blobs the store held when a snapshot
// began and of every blob the snapshot has claimed since. A snapshot of
// new files asks the store about each blob before writing it, and in a
// folder of a hundred thousand blobs that stat of a missing name costs a
// search of the folder's index, a tenth of the snapshot's time. A "maybe"
// from the filter (a present blob, or a false positive: about one in a
// hundred) is answered by the store as before; "no" skips the question.
// A blob another process stores meanwhile is found when the snapshot
// installs its own copy (installNoSync keeps the existing one).
//
// The filter is safe for concurrent use. Its memory is two bytes per blob
// it was sized for.
type blobFilter struct {
	words []atomic.Uint64
	mask  uint64 // the number of bits, minus one (a power of two)
}

// filterBits is the filter's size in bits per blob: with four probes the
// false positive rate is below 1 %.
const filterBits = 16

// filterScanFactor bounds the listing of the store at this many entries
// per file of the workspace (plus filterScanMin): listing a store far
// larger than the workspace would cost more than the stats it saves, so
// the snapshot goes without a filter then. Tests lower filterScanMin.
const filterScanFactor = 4

var filterScanMin = 1 << 16

// newBlobFilter lists the store and returns a filter of its blobs sized
// for them and files more, or nil (no filter: ask the store every time)
// when the store holds more than the listing bound or cannot be listed.
func newBlobFilter(s *BlobStore, files int) *blobFilter {
	limit := filterScanFactor*files + filterScanMin
	var have [][8]byte
	err := dirlist.Each(s.fsys, s.dir, func(e fs.DirEntry) error {
		if !digest.IsHex(e.Name()) {
			return nil
		}
		if len(have) >= limit {
			return errFilterFull
		}
		var p [8]byte
		hex.Decode(p[:], []byte(e.Name()[:16])) // IsHex checked the digits
		have = append(have, p)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	f := makeBlobFilter(len(have) + files)
	for _, p := range have {
		f.addPrefix(binary.LittleEndian.Uint64(p[:]))
	}
	return f
}

var errFilterFull = errors.New("capsule: blob filter: the store is larger than the listing bound")

// makeBlobFilter returns an empty filter sized for n blobs.
func makeBlobFilter(n int) *blobFilter {
	nbits := uint64(1) << bits.Len64(uint64(max(n, 1024)*filterBits-1))
	return &blobFilter{words: make([]atomic.Uint64, nbits/64), mask: nbits - 1}
}

// prefix is the first eight bytes of d's hash, read as a number. A
// malformed digest gives 0, which only costs a look at the store.
func prefix(d digest.Digest) uint64 {
	var p [8]byte
	if h := d.Hex(); len(h) >= 16 {
		hex.Decode(p[:], []byte(h[:16]))
	}
	return binary.LittleEndian.Uint64(p[:])
}

// probes calls fn with the filter's four bits for a blob: the prefix is
// uniformly random (a sha256), so its four 16-bit slices, spread by an
// odd multiplier, serve as independent hashes.
func (f *blobFilter) probes(p uint64, fn func(word int, bit uint64) bool) bool {
	for i := range 4 {
		h := (p>>(16*i) ^ p<<(16*i) ^ uint64(i)) * 0x9e3779b97f4a7c15
		b := (h >> 17) & f.mask
		if !fn(int(b/64), 1<<(b%64)) {
			return false
		}
	}
	return true
}

func (f *blobFilter) addPrefix(p uint64) {
	f.probes(p, func(w int, bit uint64) bool {
		f.words[w].Or(bit)
		return true
	})
}

// add records that the store may hold d from now on.
func (f *blobFilter) add(d digest.Digest) { f.addPrefix(prefix(d)) }

// absent reports whether the store certainly did not hold d when the
// filter was made, nor has since through the filter's snapshot.
func (f *blobFilter) absent(d digest.Digest) bool {
	return !f.probes(prefix(d), func(w int, bit uint64) bool { return f.words[w].Load()&bit != 0 })
}
