package secret_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/secret"
	"github.com/agentcapsule/capsule/secret/secrettest"
)

// passStore makes a throwaway GPG key and password store, or skips naming
// what is missing (.ci/run installs pass and gnupg).
func passStore(t *testing.T) *secret.Pass {
	t.Helper()
	for _, tool := range []string{"pass", "gpg", "gpgconf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian: apt-get install pass gnupg): %v", tool, err)
		}
	}
	// A short GNUPGHOME: gpg-agent's socket path must fit in sun_path.
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	t.Setenv("GNUPGHOME", home)
	t.Setenv("PASSWORD_STORE_DIR", store)
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--kill", "gpg-agent").Run()
		_ = os.RemoveAll(home)
	})
	run(t, "gpg", "--batch", "--passphrase", "", "--quick-gen-key", "capsule-test@example.invalid", "default", "default", "never")
	run(t, "pass", "init", "capsule-test@example.invalid")
	return &secret.Pass{}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func TestPassConformance(t *testing.T) {
	p := passStore(t)
	secrettest.Run(t, p, secrettest.UniqueName)
	// An entry typed with plain "pass insert" ends with a newline; Get drops it.
	cmd := exec.Command("pass", "insert", "--echo", "capsule/TYPED")
	cmd.Stdin = strings.NewReader("typed-value-1\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pass insert: %v\n%s", err, out)
	}
	if v, err := p.Get("TYPED"); err != nil || v != "typed-value-1" {
		t.Errorf("Get of a typed entry = %q, %v", v, err)
	}
	b, err := os.ReadFile(filepath.Join(os.Getenv("PASSWORD_STORE_DIR"), "capsule", "TYPED.gpg"))
	if err != nil || strings.Contains(string(b), "typed-value-1") {
		t.Errorf("the entry is not encrypted on disk (%v)", err)
	}
}

func TestPassNotInstalled(t *testing.T) {
	p := &secret.Pass{Command: "capsule-no-such-pass"}
	_, err := p.Get("A")
	if !errors.Is(err, secret.ErrUnavailable) || !strings.Contains(err.Error(), "pass is not installed") {
		t.Errorf("err = %v, want ErrUnavailable saying pass is not installed", err)
	}
}
