package node

import (
	"crypto/ed25519"
	"io"

	"github.com/agentcapsule/capsule/node/ident"
	"github.com/agentcapsule/capsule/vfs"
)

// The node's identity lives in node/ident; these names keep the daemon's
// API (cmd/capsule, sim and e2e use them) where it was.

// ID names a node (ident.ID).
type ID = ident.ID

// Key is a node's private key (ident.Key).
type Key = ident.Key

// KeyFile is the name of the node's private key inside its data folder.
const KeyFile = ident.KeyFile

// Errors of the node's identity (ident.ErrBadKey, ident.ErrBadID).
var (
	ErrBadKey = ident.ErrBadKey
	ErrBadID  = ident.ErrBadID
)

// IDFromPublicKey returns the node ID of pub (ident.IDFromPublicKey).
func IDFromPublicKey(pub ed25519.PublicKey) ID { return ident.IDFromPublicKey(pub) }

// ParseID checks that s is a node ID (ident.ParseID).
func ParseID(s string) (ID, error) { return ident.ParseID(s) }

// NewKey generates a node key from r (ident.NewKey).
func NewKey(r io.Reader) (*Key, error) { return ident.NewKey(r) }

// LoadOrCreateKey loads the node key in dir, creating it on first start
// (ident.LoadOrCreateKey).
func LoadOrCreateKey(fsys vfs.FS, dir string, entropy io.Reader) (*Key, error) {
	return ident.LoadOrCreateKey(fsys, dir, entropy)
}

// LoadKey loads the node key in dir (ident.LoadKey).
func LoadKey(fsys vfs.FS, dir string) (*Key, error) { return ident.LoadKey(fsys, dir) }
