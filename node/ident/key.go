package ident

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base32"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agentcapsule/capsule/vfs"
)

// KeyFile is the name of the node's private key inside its data folder. It is
// written once, on first start, with mode 0600.
const KeyFile = "node.key"

// ErrBadKey is returned when the node key file exists but cannot be used.
var ErrBadKey = errors.New("node: bad key file")

// ErrBadID is returned by ParseID for a string that is not a node ID.
var ErrBadID = errors.New("node: bad node ID")

// idLen is the number of base32 characters of the key hash kept in an ID:
// 26 characters carry 130 bits.
const idLen = 26

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// ID names a node: "n" followed by the first 26 characters of the lowercase,
// unpadded base32 encoding of sha256(ed25519 public key). A node's ID is a
// function of its key alone, so a peer that presents a certificate for
// another key cannot claim the ID.
type ID string

// IDFromPublicKey derives the node ID of pub.
func IDFromPublicKey(pub ed25519.PublicKey) ID {
	sum := sha256.Sum256(pub)
	return ID("n" + strings.ToLower(idEncoding.EncodeToString(sum[:]))[:idLen])
}

// ParseID checks the form of s and returns it as an ID.
func ParseID(s string) (ID, error) {
	if len(s) != 1+idLen || s[0] != 'n' {
		return "", fmt.Errorf("%w: %q (want \"n\" and %d base32 characters)", ErrBadID, clip(s), idLen)
	}
	for _, c := range s[1:] {
		if !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return "", fmt.Errorf("%w: %q has %q", ErrBadID, clip(s), c)
		}
	}
	return ID(s), nil
}

// Short returns the first 8 characters of the ID, for display only.
func (id ID) Short() string {
	if len(id) > 8 {
		return string(id[:8])
	}
	return string(id)
}

// Key is a node's ed25519 identity key.
type Key struct {
	priv ed25519.PrivateKey
	id   ID
}

// NewKey generates a key from the entropy source r (crypto/rand when nil).
func NewKey(r io.Reader) (*Key, error) {
	if r == nil {
		r = rand.Reader
	}
	_, priv, err := ed25519.GenerateKey(r)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return keyFrom(priv), nil
}

func keyFrom(priv ed25519.PrivateKey) *Key {
	return &Key{priv: priv, id: IDFromPublicKey(priv.Public().(ed25519.PublicKey))}
}

// ID returns the node ID derived from the key.
func (k *Key) ID() ID { return k.id }

// Public returns the public half of the key.
func (k *Key) Public() ed25519.PublicKey { return k.priv.Public().(ed25519.PublicKey) }

// Sign signs msg with the key.
func (k *Key) Sign(msg []byte) []byte { return ed25519.Sign(k.priv, msg) }

// LoadOrCreateKey reads DIR/node.key, creating it (mode 0600, written
// atomically and durably) when it does not exist yet. A key file that exists
// but does not parse is an error: a node never silently changes identity.
func LoadOrCreateKey(fsys vfs.FS, dir string, entropy io.Reader) (*Key, error) {
	name := filepath.Join(dir, KeyFile)
	data, err := vfs.ReadFile(fsys, name)
	if err == nil {
		return parseKey(data)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load key: %w", err)
	}
	k, err := NewKey(entropy)
	if err != nil {
		return nil, err
	}
	if err := vfs.WriteFile(fsys, name, k.marshal(), 0o600); err != nil {
		return nil, fmt.Errorf("save key: %w", err)
	}
	return k, nil
}

// LoadKey reads DIR/node.key; it never creates one.
func LoadKey(fsys vfs.FS, dir string) (*Key, error) {
	data, err := vfs.ReadFile(fsys, filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, fmt.Errorf("load key: %w", err)
	}
	return parseKey(data)
}

func (k *Key) marshal() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(k.priv)
	if err != nil {
		panic(err) // an ed25519 key always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func parseKey(data []byte) (*Key, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%w: no PEM \"PRIVATE KEY\" block", ErrBadKey)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	priv, ok := parsed.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: not an ed25519 key", ErrBadKey)
	}
	return keyFrom(priv), nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
