package ident

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
)

// fixedEntropy makes key generation deterministic in tests.
func fixedEntropy(b byte) *bytes.Reader { return bytes.NewReader(bytes.Repeat([]byte{b}, 64)) }

func TestIDFromPublicKeyIsStableAndParses(t *testing.T) {
	pub := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)).Public().(ed25519.PublicKey)
	got := IDFromPublicKey(pub)
	// Golden: changing the derivation would orphan every peer list.
	const want = ID("n72asyextvngonlc5w2nmguxza3")
	if got != want {
		t.Fatalf("IDFromPublicKey = %q, want %q", got, want)
	}
	if _, err := ParseID(string(got)); err != nil {
		t.Fatalf("ParseID(%q): %v", got, err)
	}
}

func TestParseIDRejects(t *testing.T) {
	for _, s := range []string{"", "n", "x" + strings.Repeat("a", 26), "n" + strings.Repeat("a", 25), "n" + strings.Repeat("A", 26), "n" + strings.Repeat("1", 26), "n" + strings.Repeat("a", 27)} {
		if _, err := ParseID(s); !errors.Is(err, ErrBadID) {
			t.Errorf("ParseID(%q) = %v, want ErrBadID", s, err)
		}
	}
}

func TestLoadOrCreateKeyCreatesOnceWithMode0600(t *testing.T) {
	fsys := vfs.NewMem()
	if err := vfs.MkdirAllDurable(fsys, "/data", 0o700); err != nil {
		t.Fatal(err)
	}
	k1, err := LoadOrCreateKey(fsys, "/data", fixedEntropy(1))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := fsys.Stat(filepath.Join("/data", KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("key mode = %v, want 0600", got)
	}
	k2, err := LoadOrCreateKey(fsys, "/data", fixedEntropy(2))
	if err != nil {
		t.Fatal(err)
	}
	if k1.ID() != k2.ID() {
		t.Errorf("second start changed the ID: %s then %s", k1.ID(), k2.ID())
	}
	fsys.Crash()
	k3, err := LoadKey(fsys, "/data")
	if err != nil {
		t.Fatalf("key lost in a crash: %v", err)
	}
	if k3.ID() != k1.ID() {
		t.Errorf("ID after crash = %s, want %s", k3.ID(), k1.ID())
	}
}

func TestLoadKeyRefusesGarbage(t *testing.T) {
	fsys := vfs.NewMem()
	_ = fsys.MkdirAll("/data", 0o700)
	if err := vfs.WriteFile(fsys, "/data/"+KeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(fsys, "/data", nil); !errors.Is(err, ErrBadKey) {
		t.Fatalf("err = %v, want ErrBadKey (a node must never silently change identity)", err)
	}
}
