// Package store is a node's content-addressed store: blobs named by their
// sha256 and verified as they are written (Disk, and Mem, its in-memory
// twin, both behind Store), the stat cache that lets a workspace be
// recorded without hashing what did not change (StatCache, RecordWork),
// the checkout of a snapshot from a folder of blobs touching only what
// differs (Checkout, the shadow workspace's engine), durable writes
// batched into one round of fsyncs (Batch), and delta encoding of a blob
// against an earlier version (EncodeDelta, DecodeDelta).
//
// It knows nothing of agents, moves, peers or records: package node
// may import it; of this project's packages it imports only capsule,
// manifest, digest, vfs and internal/par. Nothing here takes a lock of a
// caller's.
package store

import (
	"errors"
	"io"

	"github.com/agentcapsule/capsule/digest"
)

// ErrBlobMismatch is returned when bytes offered to a store do not hash to
// the digest (or number the size) they were offered under.
var ErrBlobMismatch = errors.New("store: blob digest mismatch")

// ErrNotFound is returned by Open for a blob the store does not hold.
var ErrNotFound = errors.New("store: blob not found")

// Store is a set of blobs named by their digest. A blob Put returns is
// complete and verified, and a crash never leaves a torn blob under its
// name; what Put added since the last Sync may be lost to a crash (the
// blob is then absent, never half there). Implementations are safe for
// concurrent use.
type Store interface {
	// Has reports whether the store holds blob d.
	Has(d digest.Digest) bool
	// Put stores r under d, refusing (ErrBlobMismatch) bytes that do not
	// hash to d. It reports whether the blob was new and the bytes read.
	Put(d digest.Digest, r io.Reader) (bool, int64, error)
	// Open returns blob d's bytes (ErrNotFound when it is absent).
	Open(d digest.Digest) (io.ReadCloser, error)
	// List returns the digests of the blobs held, in no particular order.
	List() ([]digest.Digest, error)
	// Remove deletes blob d; removing an absent blob is not an error.
	Remove(d digest.Digest) error
	// Sync makes every blob Put so far durable.
	Sync() error
}
