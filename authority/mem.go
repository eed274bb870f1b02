package authority

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// MemKind is the kind of the file a Mem keeps: every agent's stored
// record and revision, and the last revision given out.
const MemKind schema.Kind = "fleet_mem"

// Mem is the local Authority: agents' keys in memory, and, when it has a
// file, written through to it (atomically, fsynced) before each write
// returns, like a node's own records. It is the twin that tests run and
// the shape of the single-node default: one process owns the file.
type Mem struct {
	mu     sync.Mutex
	fsys   vfs.FS
	file   string
	rev    int64
	agents map[string]memEntry
}

type memEntry struct {
	Value    []byte `json:"value"`
	Revision int64  `json:"revision"`
}

// memFile is Mem's file as stored.
type memFile struct {
	header
	Revision int64               `json:"revision"`
	Agents   map[string]memEntry `json:"agents"`
}

// NewMem returns an empty Mem that keeps nothing on disk.
func NewMem() *Mem {
	return &Mem{agents: map[string]memEntry{}}
}

// OpenMem returns a Mem kept in file on fsys, read back if it exists.
func OpenMem(fsys vfs.FS, file string) (*Mem, error) {
	m := &Mem{fsys: fsys, file: file, agents: map[string]memEntry{}}
	b, err := vfs.ReadFile(fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("authority: open %s: %w", file, err)
	}
	var f memFile
	if err := decode(MemKind, b, &f, &f.header); err != nil {
		return nil, fmt.Errorf("authority: open %s: %w", file, err)
	}
	m.rev = f.Revision
	if f.Agents != nil {
		m.agents = f.Agents
	}
	return m, nil
}

// Get returns the agent's key.
func (m *Mem) Get(ctx context.Context, agent string) (Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entryLocked(agent)
}

// Put creates the agent's key holding h if it is absent.
func (m *Mem) Put(ctx context.Context, agent string, h Holding) (Entry, error) {
	if err := CheckWrite(agent, Holding{}, h); err != nil {
		return Entry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := m.entryLocked(agent)
	if err == nil {
		return Entry{}, &ConflictError{Agent: agent, Expect: h, Now: cur}
	}
	if !errors.Is(err, ErrNotFound) {
		return Entry{}, err
	}
	return m.writeLocked(agent, h)
}

// CompareAndSwap replaces the key with next if its value and revision
// are expect's.
func (m *Mem) CompareAndSwap(ctx context.Context, agent string, expect Entry, next Holding) (Entry, error) {
	if err := CheckWrite(agent, expect.Holding, next); err != nil {
		return Entry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := m.entryLocked(agent)
	if errors.Is(err, ErrNotFound) {
		return Entry{}, &ConflictError{Agent: agent, Expect: expect.Holding, Absent: true}
	}
	if err != nil {
		return Entry{}, err
	}
	if cur.Revision != expect.Revision || !bytes.Equal(cur.Value, expect.Value) {
		return Entry{}, &ConflictError{Agent: agent, Expect: expect.Holding, Now: cur}
	}
	return m.writeLocked(agent, next)
}

func (m *Mem) entryLocked(agent string) (Entry, error) {
	e, ok := m.agents[agent]
	if !ok {
		return Entry{}, fmt.Errorf("%w: %s", ErrNotFound, agent)
	}
	h, err := DecodeHolding(agent, e.Value)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Holding: h, Revision: e.Revision, Value: bytes.Clone(e.Value)}, nil
}

// writeLocked stores h for agent under the next revision, durably first
// when m has a file; a write that fails to reach the file changes nothing.
func (m *Mem) writeLocked(agent string, h Holding) (Entry, error) {
	b, err := EncodeHolding(agent, h)
	if err != nil {
		return Entry{}, err
	}
	old, had := m.agents[agent]
	m.agents[agent] = memEntry{Value: b, Revision: m.rev + 1}
	if err := m.saveLocked(m.rev + 1); err != nil {
		if had {
			m.agents[agent] = old
		} else {
			delete(m.agents, agent)
		}
		return Entry{}, err
	}
	m.rev++
	return Entry{Holding: h, Revision: m.rev, Value: bytes.Clone(b)}, nil
}

func (m *Mem) saveLocked(rev int64) error {
	if m.fsys == nil {
		return nil
	}
	b, err := json.Marshal(memFile{header: newHeader(), Revision: rev, Agents: m.agents})
	if err != nil {
		return fmt.Errorf("authority: save %s: %w", m.file, err)
	}
	if err := vfs.WriteFile(m.fsys, m.file, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("authority: save %s: %w", m.file, err)
	}
	return nil
}
