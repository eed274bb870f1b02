package digest

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"fmt"
)

// BlockSize is the size of a SHA-256 block; Blocks2 and Lane.Write take
// whole blocks.
const BlockSize = sha256.BlockSize

// Lane is a message part way through hashing, a whole number of blocks
// in: the state Blocks2 advances two at a time. The zero value is not
// usable; start with NewLane.
type Lane struct {
	h [8]uint32
	n uint64 // bytes compressed, a multiple of BlockSize
}

// iv is SHA-256's initial state (FIPS 180-4 §5.3.3).
var iv = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}

// NewLane returns a Lane at the start of a message.
func NewLane() Lane { return Lane{h: iv} }

// Len returns the number of bytes hashed into l.
func (l *Lane) Len() int64 { return int64(l.n) }

// Blocks2 adds a to x and b to y, two messages hashed on one core at
// once. a and b must have the same length, a whole number of blocks. On
// CPUs with the SHA extensions (and AVX) this takes little more time than
// hashing one of them: the rounds of one message wait on each other, and
// the other message's rounds fill the wait. Elsewhere it hashes one after
// the other.
func Blocks2(x, y *Lane, a, b []byte) {
	if len(a) != len(b) || len(a)%BlockSize != 0 {
		panic(fmt.Sprintf("digest: Blocks2 of %d and %d bytes, want equal whole blocks", len(a), len(b)))
	}
	if len(a) == 0 {
		return
	}
	if !hasBlock2 {
		x.Write(a)
		y.Write(b)
		return
	}
	h := [2][8]uint32{x.h, y.h}
	block2(&h, &a[0], &b[0], len(a)/BlockSize)
	x.h, y.h = h[0], h[1]
	x.n += uint64(len(a))
	y.n += uint64(len(b))
}

// Blocks2Native reports whether Blocks2 runs both messages on one core at
// once; when false it hashes them one after the other and pairing buys
// nothing.
func Blocks2Native() bool { return hasBlock2 }

// Write adds p, a whole number of blocks, to l alone.
func (l *Lane) Write(p []byte) {
	if len(p)%BlockSize != 0 {
		panic(fmt.Sprintf("digest: Lane.Write of %d bytes, want whole blocks", len(p)))
	}
	h := l.Hasher()
	h.Write(p)
	b, err := h.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		panic("digest: " + err.Error()) // crypto/sha256 always marshals
	}
	for i := range l.h {
		l.h[i] = binary.BigEndian.Uint32(b[len(magic)+4*i:])
	}
	l.n += uint64(len(p))
}

// Hasher returns a Hasher that continues l's message: writing the rest
// of it and taking the Digest gives the digest of the whole message.
func (l *Lane) Hasher() *Hasher {
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(l.marshal()); err != nil {
		panic("digest: " + err.Error()) // the layout below is crypto/sha256's
	}
	return &Hasher{h: h, n: int64(l.n)}
}

// Digest returns the digest of l's message followed by tail.
func (l *Lane) Digest(tail []byte) Digest {
	h := l.Hasher()
	h.Write(tail)
	return h.Digest()
}

// magic starts crypto/sha256's marshalled state: the magic, the eight
// state words, a block of pending bytes (none here) and the length, all
// big-endian.
const magic = "sha\x03"

func (l *Lane) marshal() []byte {
	b := make([]byte, 0, len(magic)+8*4+BlockSize+8)
	b = append(b, magic...)
	for _, w := range l.h {
		b = binary.BigEndian.AppendUint32(b, w)
	}
	b = append(b, make([]byte, BlockSize)...)
	return binary.BigEndian.AppendUint64(b, l.n)
}
