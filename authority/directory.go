package authority

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// NodeInfo is what a node registers of itself in the directory.
type NodeInfo struct {
	ID        string `json:"id"`
	Addr      string `json:"addr"`       // where peers dial it (host:port)
	PublicKey string `json:"public_key"` // checked in the TLS handshake; the directory only says where
	Release   string `json:"release"`
	// Reads lists, per schema kind, the versions the node reads.
	Reads    map[string][]int  `json:"reads,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Cordoned bool              `json:"cordoned,omitempty"` // the node asked for nothing new (it starts cordoned)
}

// Node is one node as the directory shows it: what it registered, and
// what the fleet knows of it.
type Node struct {
	NodeInfo
	// Reachable: the node's lease is alive. A node whose lease expired
	// stays listed, unreachable; its agents' keys are never touched.
	Reachable bool `json:"reachable"`
	// Admitted: an operator admitted it. Nothing is placed on a node that
	// is not, and it receives no moves.
	Admitted bool `json:"admitted"`
	// Cordoned: the node or an operator cordoned it. Nothing new is
	// placed on it and nothing moves in.
	Cordoned bool `json:"cordoned"`
}

// Placeable reports whether agents may be placed on or moved to n.
func (n Node) Placeable() bool { return n.Reachable && n.Admitted && !n.Cordoned }

// Directory is the fleet's list of nodes.
type Directory interface {
	// Register records info and keeps the node reachable until the
	// registration is closed or its lease lapses.
	Register(ctx context.Context, info NodeInfo) (Registration, error)
	// List returns every node ever registered, sorted by ID.
	List(ctx context.Context) ([]Node, error)
	// Watch sends the whole list now and again after every change, until
	// ctx ends; then it closes the channel.
	Watch(ctx context.Context) (<-chan []Node, error)
	// Admit, Cordon and Uncordon record an operator's decision about the
	// node ID, registered or not yet.
	Admit(ctx context.Context, id string) error
	Cordon(ctx context.Context, id string) error
	Uncordon(ctx context.Context, id string) error
}

// Registration is a node's presence in the directory.
type Registration interface {
	// Lost is closed when the node can no longer keep itself reachable
	// (its lease lapsed or was revoked); the node registers again.
	Lost() <-chan struct{}
	// Close ends the presence at once: the node shows as unreachable.
	Close() error
}

// nodeRecord is a registration as stored.
type nodeRecord struct {
	header
	Node NodeInfo `json:"node"`
}

// markRecord is an operator's admission or cordon as stored.
type markRecord struct {
	header
	ID string `json:"id"`
}

// EncodeNode returns the stored bytes of info's registration.
func EncodeNode(info NodeInfo) ([]byte, error) {
	return encodeJSON(nodeRecord{header: newHeader(), Node: info})
}

// DecodeNode reads a stored registration.
func DecodeNode(b []byte) (NodeInfo, error) {
	var r nodeRecord
	if err := decode(NodeKind, b, &r, &r.header); err != nil {
		return NodeInfo{}, fmt.Errorf("authority: node: %w", err)
	}
	return r.Node, nil
}

// EncodeMark returns the stored bytes of an admission or a cordon of id.
func EncodeMark(id string) ([]byte, error) {
	return encodeJSON(markRecord{header: newHeader(), ID: id})
}

// DecodeMark reads a stored admission or cordon (kind says which) and
// returns the node ID it names.
func DecodeMark(kind string, b []byte) (string, error) {
	var r markRecord
	if err := decode(markKind(kind), b, &r, &r.header); err != nil {
		return "", fmt.Errorf("authority: %s: %w", kind, err)
	}
	return r.ID, nil
}

// Nodes assembles the directory's view from the registrations and the
// IDs that are alive, admitted and cordoned. An admission or cordon of a
// node that never registered shows the node with its ID alone.
func Nodes(infos []NodeInfo, alive, admitted, cordoned map[string]bool) []Node {
	byID := map[string]Node{}
	for _, in := range infos {
		byID[in.ID] = Node{NodeInfo: in}
	}
	for _, ids := range []map[string]bool{alive, admitted, cordoned} {
		for id := range ids {
			if _, ok := byID[id]; !ok {
				byID[id] = Node{NodeInfo: NodeInfo{ID: id}}
			}
		}
	}
	out := make([]Node, 0, len(byID))
	for id, n := range byID {
		n.Reachable, n.Admitted = alive[id], admitted[id]
		n.Cordoned = n.NodeInfo.Cordoned || cordoned[id]
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	return out
}
