package store

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/agentcapsule/capsule/digest"
)

// Mem is the in-memory twin of Disk, for tests and simulations: it keeps
// the promise of Store and no more. What was Put or removed since the last
// Sync is undone by Crash, as a power loss may undo it on a disk. The zero
// value is an empty store.
type Mem struct {
	mu      sync.Mutex // guards both maps; taken last
	live    map[digest.Digest][]byte
	durable map[digest.Digest][]byte
}

var _ Store = (*Mem)(nil)

// Has reports whether the store holds blob d.
func (m *Mem) Has(d digest.Digest) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.live[d]
	return ok
}

// Put stores r under d, verifying the content hashes to d.
func (m *Mem) Put(d digest.Digest, r io.Reader) (bool, int64, error) {
	if m.Has(d) {
		n, err := io.Copy(io.Discard, r)
		return false, n, err
	}
	h := digest.NewHasher()
	var buf bytes.Buffer
	n, err := io.Copy(io.MultiWriter(&buf, h), r)
	if err != nil {
		return false, n, fmt.Errorf("store: put %s: %w", d.Short(), err)
	}
	if h.Digest() != d {
		return false, n, fmt.Errorf("store: put %s: %w: announced %s, content is %s", d.Short(), ErrBlobMismatch, d, h.Digest())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live == nil {
		m.live = map[digest.Digest][]byte{}
	}
	_, had := m.live[d]
	m.live[d] = buf.Bytes()
	return !had, n, nil
}

// Open returns blob d's bytes.
func (m *Mem) Open(d digest.Digest) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.live[d]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, d.Short())
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// List returns the blobs held.
func (m *Mem) List() ([]digest.Digest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]digest.Digest, 0, len(m.live))
	for d := range m.live {
		out = append(out, d)
	}
	return out, nil
}

// Remove deletes blob d.
func (m *Mem) Remove(d digest.Digest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.live, d)
	return nil
}

// Sync makes what the store holds now survive Crash.
func (m *Mem) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.durable = clone(m.live)
	return nil
}

// Crash forgets everything done since the last Sync.
func (m *Mem) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live = clone(m.durable)
}

func clone(src map[digest.Digest][]byte) map[digest.Digest][]byte {
	out := make(map[digest.Digest][]byte, len(src))
	for d, b := range src {
		out[d] = b
	}
	return out
}
