// Package digest names data by its sha256 hash.
//
// A Digest is the string "sha256:" followed by 64 lowercase hex digits. The
// package is pure: it never touches the file system, the network or the clock,
// so every other package may import it. Blocks2 hashes two messages on one
// core at once (SHA-NI, amd64), which callers that hash many files use.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
)

// Algorithm is the only hash algorithm a Digest may name.
const Algorithm = "sha256"

const prefix = Algorithm + ":"

// ErrInvalid is returned by Parse for a string that is not a well-formed digest.
var ErrInvalid = errors.New("digest: invalid")

// Digest is a content address: "sha256:<64 lowercase hex digits>".
// The zero value is the empty digest, which names nothing.
type Digest string

// FromBytes returns the digest of b.
func FromBytes(b []byte) Digest {
	sum := sha256.Sum256(b)
	return Digest(prefix + hex.EncodeToString(sum[:]))
}

// FromString returns the digest of s.
func FromString(s string) Digest { return FromBytes([]byte(s)) }

// FromReader reads r to its end and returns the digest and the number of bytes read.
func FromReader(r io.Reader) (Digest, int64, error) {
	h := NewHasher()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", n, err
	}
	return h.Digest(), n, nil
}

// FromHex returns the digest whose hex part is h, checking its form.
func FromHex(h string) (Digest, error) { return Parse(prefix + h) }

// Parse checks that s is a well-formed digest and returns it.
func Parse(s string) (Digest, error) {
	hx, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return "", fmt.Errorf("%w: %q does not start with %q", ErrInvalid, clip(s), prefix)
	}
	if !IsHex(hx) {
		return "", fmt.Errorf("%w: %q is not 64 lowercase hex digits", ErrInvalid, clip(s))
	}
	return Digest(s), nil
}

// IsHex reports whether s is exactly 64 lowercase hex digits, the form of a
// blob's file name.
func IsHex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !lowerHex[s[i]] {
			return false
		}
	}
	return true
}

// IsHexDigit reports whether c is one of the digits IsHex accepts
// (0-9, a-f).
func IsHexDigit(c byte) bool { return lowerHex[c] }

// lowerHex marks the bytes IsHex accepts (a table: snapshot.json of a
// large workspace checks tens of thousands of digits while a move is
// frozen).
var lowerHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()

// Hex returns the 64 hex digits of d, the form used as a blob's file name.
func (d Digest) Hex() string { return strings.TrimPrefix(string(d), prefix) }

// String returns d in its full "sha256:<hex>" form.
func (d Digest) String() string { return string(d) }

// Short returns the first 12 hex digits, for display only.
func (d Digest) Short() string {
	h := d.Hex()
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// IsZero reports whether d is the empty digest.
func (d Digest) IsZero() bool { return d == "" }

// Validate reports whether d is well formed.
func (d Digest) Validate() error {
	_, err := Parse(string(d))
	return err
}

// Hasher computes a digest over bytes written to it.
type Hasher struct {
	h hash.Hash
	n int64
}

// NewHasher returns a Hasher ready for writing.
func NewHasher() *Hasher { return &Hasher{h: sha256.New()} }

// Write adds p to the hash. It never returns an error.
func (h *Hasher) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	return h.h.Write(p)
}

// Reset empties h, as if newly made, keeping its state's memory.
func (h *Hasher) Reset() {
	h.h.Reset()
	h.n = 0
}

// Size returns the number of bytes written so far.
func (h *Hasher) Size() int64 { return h.n }

// Digest returns the digest of everything written so far.
func (h *Hasher) Digest() Digest {
	return Digest(prefix + hex.EncodeToString(h.h.Sum(nil)))
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
