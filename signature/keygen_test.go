package signature

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// The tests below run the real ssh-keygen (package openssh-client, which
// .ci/run installs) so "compatible with ssh-keygen" is checked, not assumed.

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not found on PATH (install openssh-client): %v", name, err)
	}
	return p
}

// testKey is a key pair ssh-keygen generated in a temporary directory.
type testKey struct {
	typ     string // "ed25519", "rsa", "ecdsa"
	path    string // private key file; path+".pub" is the public key
	pubLine string // the .pub file's line
	signer  ssh.Signer
}

// genKey runs ssh-keygen to make a key of type typ, encrypted with
// passphrase if it is not empty.
func genKey(t *testing.T, typ, passphrase string) testKey {
	t.Helper()
	needTool(t, "ssh-keygen")
	path := filepath.Join(t.TempDir(), "id_"+typ)
	args := []string{"-q", "-t", typ, "-N", passphrase, "-C", "test@capsule", "-f", path}
	switch typ {
	case "rsa":
		args = append(args, "-b", "2048")
	case "ecdsa":
		args = append(args, "-b", "256")
	}
	run(t, nil, "ssh-keygen", args...)
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	k := testKey{typ: typ, path: path, pubLine: strings.TrimSpace(string(pub))}
	if passphrase == "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if k.signer, err = ParseKey(pem, nil); err != nil {
			t.Fatalf("ParseKey(%s): %v", typ, err)
		}
	}
	return k
}

// run runs a command and fails the test if it fails.
func run(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	out, err := runErr(stdin, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return cmd.CombinedOutput()
}

// keygenVerify runs `ssh-keygen -Y verify` and reports whether it accepted.
func keygenVerify(t *testing.T, allowed, identity string, manifest, sig []byte) (bool, string) {
	t.Helper()
	dir := t.TempDir()
	as := filepath.Join(dir, "allowed_signers")
	sigPath := filepath.Join(dir, FileName)
	if err := os.WriteFile(as, []byte(allowed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sigPath, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runErr(manifest, "ssh-keygen", "-Y", "verify", "-f", as, "-I", identity, "-n", Namespace, "-s", sigPath)
	return err == nil, string(out)
}

// keygenSign runs `ssh-keygen -Y sign` over manifest in namespace ns.
func keygenSign(t *testing.T, k testKey, ns string, manifest []byte) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(p, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, nil, "ssh-keygen", "-Y", "sign", "-f", k.path, "-n", ns, p)
	sig, err := os.ReadFile(p + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

var update = flag.Bool("update", false, "rewrite the seed corpora in testdata/")
