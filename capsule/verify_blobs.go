package capsule

import (
	"bytes"
	"encoding/hex"
	"sort"
)

// blobTable is the set of blob files Verify found: 40 bytes per blob (its
// digest and its size), in chunks so that it grows without copying, sorted
// once the walk is done. At a million blobs it holds 40 MB where a map of
// names held several times that. Referenced marks are a bitset beside it.
type blobTable struct {
	chunks [][]blobRec
	n      int
	refs   []uint64 // bit i: blob i is referenced; made by sort
}

// blobRec is one blob: its digest and its size (-1 until hashed when
// unknown, corruptBlob once its content fails its name).
type blobRec struct {
	key  [32]byte
	size int64
}

const chunkLen = 8192

func (t *blobTable) add(key [32]byte, size int64) {
	if t.n%chunkLen == 0 {
		t.chunks = append(t.chunks, make([]blobRec, 0, chunkLen))
	}
	c := &t.chunks[len(t.chunks)-1]
	*c = append(*c, blobRec{key: key, size: size})
	t.n++
}

// addHex adds the blob named hx (64 lower-case hex digits, checked by the caller).
func (t *blobTable) addHex(hx string, size int64) {
	var key [32]byte
	_, _ = hex.Decode(key[:], []byte(hx))
	t.add(key, size)
}

func (t *blobTable) at(i int) *blobRec { return &t.chunks[i/chunkLen][i%chunkLen] }

// Len, Less and Swap sort the table by digest.
func (t *blobTable) Len() int           { return t.n }
func (t *blobTable) Less(i, j int) bool { return bytes.Compare(t.at(i).key[:], t.at(j).key[:]) < 0 }
func (t *blobTable) Swap(i, j int)      { a, b := t.at(i), t.at(j); *a, *b = *b, *a }

// sort orders the table for find and clears the referenced marks.
func (t *blobTable) sort() {
	sort.Sort(t)
	t.refs = make([]uint64, (t.n+63)/64)
}

// find returns the index of the blob named hx, if present.
func (t *blobTable) find(hx string) (int, bool) {
	var key [32]byte
	if len(hx) != 64 {
		return 0, false
	}
	if _, err := hex.Decode(key[:], []byte(hx)); err != nil {
		return 0, false
	}
	i := sort.Search(t.n, func(i int) bool { return bytes.Compare(t.at(i).key[:], key[:]) >= 0 })
	return i, i < t.n && t.at(i).key == key
}

// refer marks blob i referenced and reports whether it was before.
func (t *blobTable) refer(i int) bool {
	w, bit := i/64, uint64(1)<<(i%64)
	was := t.refs[w]&bit != 0
	t.refs[w] |= bit
	return was
}

func (t *blobTable) referenced(i int) bool { return t.refs[i/64]&(uint64(1)<<(i%64)) != 0 }

// clearRefs forgets every referenced mark.
func (t *blobTable) clearRefs() { clear(t.refs) }

func (t *blobTable) hex(i int) string { k := t.at(i).key; return hex.EncodeToString(k[:]) }
