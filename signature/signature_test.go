package signature

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/agent"
)

var keyTypes = []string{"ed25519", "rsa", "ecdsa"}

var testManifest = []byte("{\n  \"format\": 1,\n  \"id\": \"01HZX0000000000000000000AB\"\n}\n")

// TestSignIsWhatSSHKeygenWrites: for deterministic key types our armored
// signature is byte-identical to ssh-keygen's (FORMAT §10.1).
func TestSignIsWhatSSHKeygenWrites(t *testing.T) {
	for _, typ := range []string{"ed25519", "rsa"} {
		t.Run(typ, func(t *testing.T) {
			k := genKey(t, typ, "")
			got, err := Sign(testManifest, k.signer)
			if err != nil {
				t.Fatal(err)
			}
			want := keygenSign(t, k, Namespace, testManifest)
			if !bytes.Equal(got, want) {
				t.Errorf("Sign differs from ssh-keygen -Y sign:\ngot:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestSSHKeygenVerifiesOurs: ssh-keygen -Y verify accepts our signatures
// for every key type, and rejects them over changed bytes.
func TestSSHKeygenVerifiesOurs(t *testing.T) {
	for _, typ := range keyTypes {
		t.Run(typ, func(t *testing.T) {
			k := genKey(t, typ, "")
			sig, err := Sign(testManifest, k.signer)
			if err != nil {
				t.Fatal(err)
			}
			allowed := `ops@example.com namespaces="capsule" ` + k.pubLine + "\n"
			if ok, out := keygenVerify(t, allowed, "ops@example.com", testManifest, sig); !ok {
				t.Fatalf("ssh-keygen rejected our signature: %s", out)
			}
			tampered := bytes.Replace(testManifest, []byte("AB"), []byte("AC"), 1)
			if ok, _ := keygenVerify(t, allowed, "ops@example.com", tampered, sig); ok {
				t.Fatal("ssh-keygen accepted our signature over tampered bytes")
			}
		})
	}
}

// TestWeVerifySSHKeygens: our Verify accepts ssh-keygen's signatures for
// every key type, and names what is wrong otherwise.
func TestWeVerifySSHKeygens(t *testing.T) {
	for _, typ := range keyTypes {
		t.Run(typ, func(t *testing.T) {
			k := genKey(t, typ, "")
			sig := keygenSign(t, k, Namespace, testManifest)
			allowed := "ops@example.com " + k.pubLine + "\n"
			if err := Verify(testManifest, sig, strings.NewReader(allowed), "ops@example.com"); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			tampered := append(bytes.Clone(testManifest), ' ')
			if err := Verify(tampered, sig, strings.NewReader(allowed), "ops@example.com"); !errors.Is(err, ErrMismatch) {
				t.Errorf("tampered manifest: err = %v, want ErrMismatch", err)
			}
			if err := Verify(testManifest, sig, strings.NewReader(allowed), "eve@example.com"); !errors.Is(err, ErrUntrusted) {
				t.Errorf("other identity: err = %v, want ErrUntrusted", err)
			}
			gitSig := keygenSign(t, k, "git", testManifest)
			if err := Verify(testManifest, gitSig, strings.NewReader(allowed), "ops@example.com"); !errors.Is(err, ErrNamespace) {
				t.Errorf("namespace git: err = %v, want ErrNamespace", err)
			}
		})
	}
}

// TestPoliciesAgreeWithSSHKeygen runs each allowed_signers policy through
// both ssh-keygen and Verify: they must agree, and match the expectation.
func TestPoliciesAgreeWithSSHKeygen(t *testing.T) {
	k := genKey(t, "ed25519", "")
	other := genKey(t, "ed25519", "")
	sig, err := Sign(testManifest, k.signer)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().AddDate(-1, 0, 0).UTC().Format("20060102")
	future := time.Now().AddDate(1, 0, 0).UTC().Format("20060102")
	tests := []struct {
		name    string
		allowed string
		id      string
		wantErr error
	}{
		{"exact principal", "ops@example.com " + k.pubLine, "ops@example.com", nil},
		{"wildcard principal", "*@example.com " + k.pubLine, "ops@example.com", nil},
		{"principal list", `"dev@example.com,ops@example.com" ` + k.pubLine, "ops@example.com", nil},
		{"negated principal", "*@example.com,!ops@example.com " + k.pubLine, "ops@example.com", ErrUntrusted},
		{"other principal", "dev@example.com " + k.pubLine, "ops@example.com", ErrUntrusted},
		{"other key", "ops@example.com " + other.pubLine, "ops@example.com", ErrUntrusted},
		{"namespace listed", `ops@example.com namespaces="git,capsule" ` + k.pubLine, "ops@example.com", nil},
		{"namespace pattern", `ops@example.com namespaces="caps*" ` + k.pubLine, "ops@example.com", nil},
		{"namespace excluded", `ops@example.com namespaces="git" ` + k.pubLine, "ops@example.com", ErrUntrusted},
		{"valid window", `ops@example.com valid-after="` + past + `Z",valid-before="` + future + `Z" ` + k.pubLine, "ops@example.com", nil},
		{"not yet valid", `ops@example.com valid-after="` + future + `" ` + k.pubLine, "ops@example.com", ErrNotValidNow},
		{"expired", `ops@example.com valid-before="` + past + `" ` + k.pubLine, "ops@example.com", ErrNotValidNow},
		{"second line matches", "ops@example.com " + other.pubLine + "\nops@example.com " + k.pubLine, "ops@example.com", nil},
		{"comments and blanks", "# team keys\n\n  ops@example.com " + k.pubLine + " laptop", "ops@example.com", nil},
		{"cert-authority only", "ops@example.com cert-authority " + k.pubLine, "ops@example.com", ErrCertAuthority},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			allowed := tc.allowed + "\n"
			err := Verify(testManifest, sig, strings.NewReader(allowed), tc.id)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("Verify: err = %v, want %v", err, tc.wantErr)
			}
			ok, out := keygenVerify(t, allowed, tc.id, testManifest, sig)
			if ok != (tc.wantErr == nil) {
				t.Errorf("ssh-keygen accepted = %v, want %v: %s", ok, tc.wantErr == nil, out)
			}
		})
	}
}

func TestParseKeyPassphrase(t *testing.T) {
	const secret = "correct horse battery staple"
	k := genKey(t, "ed25519", secret)
	pem, err := os.ReadFile(k.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseKey(pem, nil); !errors.Is(err, ErrPassphrase) {
		t.Errorf("no passphrase: err = %v, want ErrPassphrase", err)
	}
	_, err = ParseKey(pem, func() ([]byte, error) { return []byte("wrong " + secret), nil })
	if !errors.Is(err, ErrBadPassphrase) {
		t.Errorf("wrong passphrase: err = %v, want ErrBadPassphrase", err)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("error %q leaks the passphrase", err)
	}
	s, err := ParseKey(pem, func() ([]byte, error) { return []byte(secret), nil })
	if err != nil {
		t.Fatalf("right passphrase: %v", err)
	}
	sig, err := Sign(testManifest, s)
	if err != nil {
		t.Fatal(err)
	}
	if ok, out := keygenVerify(t, "a@b "+k.pubLine+"\n", "a@b", testManifest, sig); !ok {
		t.Errorf("ssh-keygen rejected the signature of a passphrase key: %s", out)
	}
}

// TestAgentSigner signs through a real ssh-agent started for the test.
func TestAgentSigner(t *testing.T) {
	needTool(t, "ssh-agent")
	needTool(t, "ssh-add")
	sock := filepath.Join(shortTempDir(t), "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ssh-agent: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitForSocket(t, sock)

	keys := map[string]testKey{}
	for _, typ := range keyTypes {
		k := genKey(t, typ, "")
		keys[typ] = k
		add := exec.Command("ssh-add", k.path)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ag := agent.NewClient(conn)
	for _, typ := range keyTypes {
		t.Run(typ, func(t *testing.T) {
			k := keys[typ]
			s, err := AgentSigner(ag, Fingerprint(k.signer.PublicKey()))
			if err != nil {
				t.Fatal(err)
			}
			sig, err := Sign(testManifest, s)
			if err != nil {
				t.Fatal(err)
			}
			if ok, out := keygenVerify(t, "ops@example.com "+k.pubLine+"\n", "ops@example.com", testManifest, sig); !ok {
				t.Fatalf("ssh-keygen rejected the agent's signature: %s", out)
			}
		})
	}
	first, err := AgentSigner(ag, "")
	if err != nil || Fingerprint(first.PublicKey()) != Fingerprint(keys["ed25519"].signer.PublicKey()) {
		t.Errorf("AgentSigner(\"\") = %v, %v; want the first key added (ed25519)", first, err)
	}
	if _, err := AgentSigner(ag, "SHA256:nosuchkey"); !errors.Is(err, ErrNoAgentKey) {
		t.Errorf("unknown fingerprint: err = %v, want ErrNoAgentKey", err)
	}
}

// shortTempDir returns a temporary directory with a short path: a unix
// socket path must fit in 108 bytes, which t.TempDir() may exceed.
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "cag")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func waitForSocket(t *testing.T, sock string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("ssh-agent did not listen on %s", sock)
}

func TestCheck(t *testing.T) {
	k := genKey(t, "ed25519", "")
	sig, err := Sign(testManifest, k.signer)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := Check(testManifest, sig)
	if err != nil || Fingerprint(pub) != Fingerprint(k.signer.PublicKey()) {
		t.Fatalf("Check = %v, %v", pub, err)
	}
	tests := []struct {
		name     string
		manifest []byte
		sig      []byte
		want     error
	}{
		{"other bytes", []byte("{}\n"), sig, ErrMismatch},
		{"not armored", testManifest, []byte("hello"), ErrMalformed},
		{"empty", testManifest, nil, ErrMalformed},
		{"truncated", testManifest, sig[:len(sig)/2], ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Check(tc.manifest, tc.sig); !errors.Is(err, tc.want) {
				t.Errorf("Check: err = %v, want %v", err, tc.want)
			}
		})
	}
}

func ExampleMatchPatternList() {
	fmt.Println(MatchPatternList("ops@example.com", "*@example.com"))
	fmt.Println(MatchPatternList("ops@example.com", "*@example.com,!ops@*"))
	// Output:
	// true
	// false
}
