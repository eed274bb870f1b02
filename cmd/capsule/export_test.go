package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/archive"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/vfs"
)

// These tests drive export, import and archive verification through the
// CLI, with a real capsule, real ssh-keygen keys and GNU tar.

func needBin(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not on PATH (.ci/run installs it): %v", name, err)
	}
}

func sh(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	c := exec.Command(name, args...)
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// newTestCapsule makes a real capsule with a two-file workspace snapshot.
func newTestCapsule(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent")
	c, err := capsule.Init(vfs.OS{}, dir, capsule.InitConfig{Name: "export-test"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Commit(func(tx *capsule.Tx) error {
		s := capsule.NewSnapshot()
		for name, body := range map[string]string{"main.go": "package main\n", "README.md": "# demo\n"} {
			d, n, err := tx.PutBlob(strings.NewReader(body))
			if err != nil {
				return err
			}
			s.Entries = append(s.Entries, capsule.Entry{Path: name, Type: capsule.TypeFile, Size: n, Blob: d})
		}
		if s.Entries[0].Path > s.Entries[1].Path {
			s.Entries[0], s.Entries[1] = s.Entries[1], s.Entries[0]
		}
		return tx.SetSnapshot(s)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// sshKey generates a key with ssh-keygen and returns its path and the
// allowed_signers file trusting it for ops@example.com.
func sshKey(t *testing.T, typ, passphrase string) (key, allowed string) {
	t.Helper()
	needBin(t, "ssh-keygen")
	dir := t.TempDir()
	key = filepath.Join(dir, "id_"+typ)
	args := []string{"-q", "-t", typ, "-N", passphrase, "-C", "test", "-f", key}
	if typ == "rsa" {
		args = append(args, "-b", "2048")
	}
	sh(t, nil, "ssh-keygen", args...)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	allowed = filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(allowed, []byte("ops@example.com "+string(pub)), 0o644); err != nil {
		t.Fatal(err)
	}
	return key, allowed
}

func TestExportImportCLI(t *testing.T) {
	needBin(t, "tar")
	needBin(t, "zstd")
	src := newTestCapsule(t)
	key, allowed := sshKey(t, "ed25519", "")
	out := t.TempDir()
	a, b := filepath.Join(out, "a.capsule.tar.zst"), filepath.Join(out, "b.capsule.tar.zst")
	for _, p := range []string{a, b} {
		if _, stderr, code := capsuleCLI(t, "export", src, "-o", p, "--sign", key, "--verify", "-q"); code != 0 {
			t.Fatalf("export: exit %d: %s", code, stderr)
		}
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Error("two signed exports of the same capsule differ")
	}
	list := string(sh(t, nil, "tar", "--zstd", "-tf", a))
	for _, want := range []string{"manifest.json\n", "manifest.json.sig\n", "memory/timeline_events.jsonl\n", "artifacts/blobs/"} {
		if !strings.Contains(list, want) {
			t.Errorf("tar tf lacks %q:\n%s", want, list)
		}
	}
	if _, err := os.Stat(filepath.Join(src, archive.SignatureName)); err == nil {
		t.Error("export left a signature in the source folder")
	}

	// The signature verifies with ssh-keygen over the archived manifest.
	x := t.TempDir()
	sh(t, nil, "tar", "--zstd", "-C", x, "-xf", a)
	m, _ := os.ReadFile(filepath.Join(x, "manifest.json"))
	sh(t, m, "ssh-keygen", "-Y", "verify", "-f", allowed, "-I", "ops@example.com", "-n", "capsule", "-s", filepath.Join(x, "manifest.json.sig"))

	dst := filepath.Join(t.TempDir(), "agent")
	stdout, stderr, code := capsuleCLI(t, "import", a, "-o", dst, "--allowed-signers", allowed, "--identity", "ops@example.com", "-q")
	if code != 0 {
		t.Fatalf("import: exit %d: %s %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "an allowed signer") {
		t.Errorf("import output %q does not report the trusted signer", stdout)
	}
	rep, err := capsule.Verify(vfs.OS{}, dst, capsule.VerifyOptions{Signature: signatureCheck(archive.Trust{})})
	if err != nil || !rep.OK() {
		t.Fatalf("imported capsule does not verify: %v %+v", err, rep)
	}
	sh(t, nil, "diff", "-r", "-x", "manifest.json.sig", src, dst)
	if _, _, code := capsuleCLI(t, "import", a, "-o", dst, "-q"); code != exitUsage {
		t.Errorf("import into a non-empty folder: exit %d, want %d", code, exitUsage)
	}
	// An archive refused for its content exits 1 and says why.
	evil := filepath.Join(t.TempDir(), "evil.tar")
	sh(t, nil, "tar", "-cf", evil, "-C", t.TempDir(), "--transform", "s,^,../,", ".")
	if _, stderr, code := capsuleCLI(t, "import", evil, "-o", filepath.Join(t.TempDir(), "e"), "-q"); code != exitVerify || !strings.Contains(stderr, "unsafe path") {
		t.Errorf("import of a traversal archive: exit %d, %q; want %d, unsafe path", code, stderr, exitVerify)
	}
}

// TestImportRefusesTamperedArchive: a changed byte in an archived file
// fails the import with exit 1, naming the file, and creates nothing; the
// same archive fails `capsule verify FILE` (runVerifyArchive).
func TestImportRefusesTamperedArchive(t *testing.T) {
	src := newTestCapsule(t)
	tarPath := filepath.Join(t.TempDir(), "agent.capsule.tar")
	if _, stderr, code := capsuleCLI(t, "export", src, "-o", tarPath, "-q"); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	data, _ := os.ReadFile(tarPath)
	i := bytes.Index(data, []byte("\"chunks\":[]"))
	if i < 0 {
		t.Fatal("the vector index content is not in the archive")
	}
	data[i+1] = 'E'
	bad := filepath.Join(t.TempDir(), "bad.capsule.tar")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "agent")
	stdout, _, code := capsuleCLI(t, "import", bad, "-o", dst, "-q")
	if code != exitVerify || !strings.Contains(stdout, "memory/vector_index/index.json") {
		t.Errorf("import of a tampered archive: exit %d, output %q; want exit %d naming the index", code, stdout, exitVerify)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Error("a refused import created its destination")
	}
	for path, want := range map[string]int{tarPath: exitOK, bad: exitVerify} {
		stdout, stderr, code := capsuleCLI(t, "verify", path, "-q", "--json")
		if code != want {
			t.Errorf("verify %s: exit %d, want %d\n%s%s", filepath.Base(path), code, want, stdout, stderr)
		}
		if want == exitVerify && !strings.Contains(stdout, `"path": "memory/vector_index/index.json"`) {
			t.Errorf("verify --json of the tampered archive does not name the index:\n%s", stdout)
		}
	}
}

// TestExportSigningKeys: RSA and ECDSA keys, a passphrase from the
// environment, and the errors for a wrong one and for bad flags.
func TestExportSigningKeys(t *testing.T) {
	src := newTestCapsule(t)
	for _, typ := range []string{"rsa", "ecdsa"} {
		key, allowed := sshKey(t, typ, "")
		p := filepath.Join(t.TempDir(), "a.capsule.tar")
		if _, stderr, code := capsuleCLI(t, "export", src, "-o", p, "--sign", key, "-q"); code != 0 {
			t.Fatalf("%s: export: %s", typ, stderr)
		}
		if _, stderr, code := capsuleCLI(t, "import", p, "-o", filepath.Join(t.TempDir(), "x"), "--allowed-signers", allowed, "--identity", "ops@example.com", "-q"); code != 0 {
			t.Errorf("%s: import with allowed signers: %s", typ, stderr)
		}
	}
	const secret = "s3cret passphrase"
	key, _ := sshKey(t, "ed25519", secret)
	p := filepath.Join(t.TempDir(), "p.capsule.tar")
	t.Setenv(passphraseEnv, secret)
	if _, stderr, code := capsuleCLI(t, "export", src, "-o", p, "--sign", key, "-q"); code != 0 {
		t.Fatalf("export with a passphrase: %s", stderr)
	}
	t.Setenv(passphraseEnv, "wrong")
	_, stderr, code := capsuleCLI(t, "export", src, "-o", p+"2", "--sign", key, "-q")
	if code != exitInternal || !strings.Contains(stderr, "wrong passphrase") || strings.Contains(stderr, secret) {
		t.Errorf("wrong passphrase: exit %d, %q", code, stderr)
	}
	if _, _, code := capsuleCLI(t, "export", src, "-o", p+"3", "--sign", key, "--sign-agent"); code != exitUsage {
		t.Errorf("--sign with --sign-agent: exit %d, want %d", code, exitUsage)
	}
	if _, _, code := capsuleCLI(t, "import", p, "-o", filepath.Join(t.TempDir(), "y"), "--identity", "x"); code != exitUsage {
		t.Errorf("--identity alone: exit %d, want %d", code, exitUsage)
	}
}

// TestExportVerifyRefusesBrokenFolder: --verify stops before writing.
func TestExportVerifyRefusesBrokenFolder(t *testing.T) {
	src := newTestCapsule(t)
	if err := os.WriteFile(filepath.Join(src, "memory", "working_memory.md"), []byte("edited behind the manifest's back\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "a.capsule.tar")
	if _, stderr, code := capsuleCLI(t, "export", src, "-o", p, "--verify", "-q"); code != exitVerify || !strings.Contains(stderr, "working_memory.md") {
		t.Errorf("export --verify of a broken folder: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(p); err == nil {
		t.Error("export --verify wrote an archive of a broken folder")
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{{"16GiB", 16 << 30}, {"1g", 1 << 30}, {"64KiB", 64 << 10}, {"1.5M", 3 << 19}, {"1000", 1000}, {"10B", 10}}
	for _, tc := range tests {
		if got, err := parseByteSize(tc.in); err != nil || got != tc.want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "x", "-1G", "1Q", "0"} {
		if _, err := parseByteSize(bad); err == nil {
			t.Errorf("parseByteSize(%q) accepted", bad)
		}
	}
}

// TestExportSignAgent signs through a real ssh-agent chosen by fingerprint.
func TestExportSignAgent(t *testing.T) {
	needBin(t, "ssh-agent")
	needBin(t, "ssh-add")
	src := newTestCapsule(t)
	sockDir, err := os.MkdirTemp("", "cag") // a unix socket path must stay short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "agent.sock")
	agentCmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agentCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agentCmd.Process.Kill(); _ = agentCmd.Wait() })
	t.Setenv("SSH_AUTH_SOCK", sock)
	first, _ := sshKey(t, "ed25519", "")
	key, allowed := sshKey(t, "ecdsa", "")
	for i := 0; ; i++ { // ssh-add fails until the agent listens
		out, err := exec.Command("ssh-add", first, key).CombinedOutput()
		if err == nil {
			break
		}
		if i == 100 {
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fp := strings.Fields(string(sh(t, nil, "ssh-keygen", "-lf", key+".pub")))[1]
	p := filepath.Join(t.TempDir(), "a.capsule.tar")
	stdout, stderr, code := capsuleCLI(t, "export", src, "-o", p, "--sign-agent", "--sign-key-fingerprint", fp, "-q")
	if code != 0 || !strings.Contains(stdout, "signed by "+fp) {
		t.Fatalf("export --sign-agent: exit %d: %s %s", code, stdout, stderr)
	}
	if _, stderr, code := capsuleCLI(t, "import", p, "-o", filepath.Join(t.TempDir(), "x"), "--allowed-signers", allowed, "--identity", "ops@example.com", "-q"); code != 0 {
		t.Errorf("import of the agent-signed archive: %s", stderr)
	}
	if _, stderr, code := capsuleCLI(t, "export", src, "-o", p+"2", "--sign-agent", "--sign-key-fingerprint", "SHA256:none", "-q"); code != exitInternal || !strings.Contains(stderr, "no matching key") {
		t.Errorf("unknown fingerprint: exit %d: %s", code, stderr)
	}
}
