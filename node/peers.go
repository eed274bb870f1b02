package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"sort"
	"sync"

	"github.com/agentcapsule/capsule/vfs"
)

// PeersFile is the name of the peer list inside the data folder.
const PeersFile = "peers.json"

// ErrUnknownPeer is returned for a node ID that is not in the peer list.
var ErrUnknownPeer = errors.New("node: unknown peer")

// ErrBadPeer is returned for a peer entry that cannot be used.
var ErrBadPeer = errors.New("node: bad peer")

// Peer is a node this node trusts: its ID pins the key it must present, and
// Addr is where it listens (host:port).
type Peer struct {
	ID   ID     `json:"id"`
	Addr string `json:"addr"`
}

type peersFile struct {
	V     int    `json:"v"`
	Peers []Peer `json:"peers"`
}

// Peers is the node's durable list of trusted peers. It is safe for
// concurrent use.
type Peers struct {
	fsys vfs.FS
	path string

	mu    sync.RWMutex
	peers map[ID]Peer
}

// OpenPeers loads DIR/peers.json; a missing file is an empty list.
func OpenPeers(fsys vfs.FS, dir string) (*Peers, error) {
	p := &Peers{fsys: fsys, path: filepath.Join(dir, PeersFile), peers: map[ID]Peer{}}
	data, err := vfs.ReadFile(fsys, p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load peers: %w", err)
	}
	var f peersFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("load peers: %w", err)
	}
	for _, peer := range f.Peers {
		if err := peer.validate(); err != nil {
			return nil, fmt.Errorf("load peers: %w", err)
		}
		p.peers[peer.ID] = peer
	}
	return p, nil
}

func (p Peer) validate() error {
	if _, err := ParseID(string(p.ID)); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(p.Addr); err != nil {
		return fmt.Errorf("%w: address %q: %v", ErrBadPeer, p.Addr, err)
	}
	return nil
}

// Add adds or updates a peer and saves the list durably.
func (p *Peers) Add(peer Peer) error {
	if err := peer.validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old, had := p.peers[peer.ID]
	p.peers[peer.ID] = peer
	if err := p.saveLocked(); err != nil {
		if had {
			p.peers[peer.ID] = old
		} else {
			delete(p.peers, peer.ID)
		}
		return err
	}
	return nil
}

// Remove removes a peer and saves the list durably.
func (p *Peers) Remove(id ID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	old, ok := p.peers[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownPeer, id)
	}
	delete(p.peers, id)
	if err := p.saveLocked(); err != nil {
		p.peers[id] = old
		return err
	}
	return nil
}

// Get returns the peer with the given ID.
func (p *Peers) Get(id ID) (Peer, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	peer, ok := p.peers[id]
	return peer, ok
}

// Known reports whether id is a trusted peer.
func (p *Peers) Known(id ID) bool {
	_, ok := p.Get(id)
	return ok
}

// List returns the peers sorted by ID.
func (p *Peers) List() []Peer {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]Peer, 0, len(p.peers))
	for _, peer := range p.peers {
		out = append(out, peer)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (p *Peers) saveLocked() error {
	f := peersFile{V: 1, Peers: make([]Peer, 0, len(p.peers))}
	for _, peer := range p.peers {
		f.Peers = append(f.Peers, peer)
	}
	sort.Slice(f.Peers, func(i, j int) bool { return f.Peers[i].ID < f.Peers[j].ID })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := vfs.WriteFile(p.fsys, p.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("save peers: %w", err)
	}
	return nil
}
