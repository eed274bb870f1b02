package node

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/secret"
	"github.com/agentcapsule/capsule/vfs"
)

// TestSecretStoreOrder: the configured store first, then CAPSULE_SECRET_,
// each read at the moment of the lookup.
func TestSecretStoreOrder(t *testing.T) {
	fsys := vfs.NewMem()
	env := map[string]string{"CAPSULE_SECRET_BOTH": "from-env-1", "CAPSULE_SECRET_ENV_ONLY": "from-env-2"}
	s, err := OpenSecretStore(fsys, "/data", secret.KindFile, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	f := secret.NewFile(fsys, "/data/"+SecretsFile)
	if err := f.Set("BOTH", "from-store-1"); err != nil { // after open: read at use
		t.Fatal(err)
	}
	for name, want := range map[string]string{"BOTH": "from-store-1", "ENV_ONLY": "from-env-2"} {
		if v, ok := s.Lookup(name); !ok || v != want {
			t.Errorf("Lookup(%s) = %q, %v; want %q", name, v, ok, want)
		}
	}
	if got := s.Missing([]string{"NOPE", "BOTH", "ENV_ONLY", "bad-name"}); strings.Join(got, ",") != "NOPE,bad-name" {
		t.Errorf("Missing = %v", got)
	}
	if got := s.Names(); strings.Join(got, ",") != "BOTH" || s.Store() != "file" {
		t.Errorf("Names = %v from %q, want [BOTH] from file (the environment is not listed)", got, s.Store())
	}
}

// TestSecretStoreUnavailableFallsBackToEnv: a store that cannot work here
// (pass with no password store) still lets the environment provide, and
// Resolve says why the store had nothing.
func TestSecretStoreUnavailableFallsBackToEnv(t *testing.T) {
	t.Setenv("PASSWORD_STORE_DIR", t.TempDir())
	s, err := OpenSecretStore(vfs.NewMem(), "/data", secret.KindPass, func(k string) string {
		if k == "CAPSULE_SECRET_TOKEN" {
			return "env-token-1"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Lookup("TOKEN"); !ok || v != "env-token-1" {
		t.Errorf("Lookup(TOKEN) = %q, %v", v, ok)
	}
	if _, err := s.Resolve("OTHER"); !errors.Is(err, secret.ErrUnavailable) {
		t.Errorf("Resolve(OTHER): err = %v, want the store's ErrUnavailable", err)
	}
}

// TestSecretStoreConfig: node.New opens the store Config.SecretStore names.
func TestSecretStoreConfig(t *testing.T) {
	if _, err := New(Config{Dir: t.TempDir(), Socket: "-", SecretStore: "vault"}); err == nil || !strings.Contains(err.Error(), `unknown store "vault"`) {
		t.Errorf("SecretStore vault: err = %v, want the unknown store named", err)
	}
	n, err := New(Config{Dir: t.TempDir(), Socket: "-", SecretStore: secret.KindFile})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	if got := n.secrets.Store(); got != secret.KindFile {
		t.Errorf("store = %q, want file", got)
	}
}
