package node

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentcapsule/capsule/api"
)

// client returns the peer API client for peer id, dialling with mutual TLS
// pinned to id. Clients are cached per peer and address.
func (n *Node) client(id ID) (*api.PeerClient, error) {
	peer, ok := n.peers.Get(id)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownPeer, id)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	key := ID(string(id) + "@" + peer.Addr)
	if c, ok := n.clients[key]; ok {
		return c, nil
	}
	dial := dialPeerTLS(ClientTLS(n.cert, id))
	var rt http.RoundTripper = alertTransport{rt: &http.Transport{
		DialTLSContext:      dial,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}, dial: dial}
	if n.cfg.WrapTransport != nil {
		rt = n.cfg.WrapTransport(id, rt)
	}
	c := api.NewPeerClient("https://"+peer.Addr, rt)
	n.clients[key] = c
	return c, nil
}

// knownPeer is the listener's check of a client's derived ID during the
// TLS handshake. A refusal is logged here: the refused node only sees a
// TLS alert, and this node's log must say why (PROTOCOL §4a).
func (n *Node) knownPeer(id ID) bool {
	if n.peers.Known(id) {
		return true
	}
	n.log.Warn("peer refused in the TLS handshake: not a known peer", "peer", string(id))
	return false
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
