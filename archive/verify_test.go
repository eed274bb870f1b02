package archive

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"github.com/agentcapsule/capsule/signature"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// testSigner is a fixed ed25519 key, so signed exports are reproducible.
func testSigner(t testing.TB, seed byte) ssh.Signer {
	t.Helper()
	s, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func allowedSigners(id string, s ssh.Signer) []byte {
	return []byte(id + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey()))) + "\n")
}

func signWith(s ssh.Signer) func([]byte) ([]byte, error) {
	return func(m []byte) ([]byte, error) { return signature.Sign(m, s) }
}

func verifyBytes(t *testing.T, mem *vfs.Mem, archive []byte, cfg VerifyConfig) *Report {
	t.Helper()
	if err := mem.MkdirAll("/tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.TempDir = "/tmp"
	if cfg.Verify == nil {
		cfg.Verify = testVerify
	}
	rep, err := VerifyReader(mem, bytes.NewReader(archive), cfg)
	if err != nil {
		t.Fatalf("VerifyReader: %v", err)
	}
	if left := entriesOf(t, mem, "/tmp"); len(left) > 0 {
		t.Errorf("Verify left %v in its temporary directory", left)
	}
	return rep
}

func TestVerifySigned(t *testing.T) {
	mem := memWith(t)
	key := testSigner(t, 1)
	archive := exportBytes(t, mem, "/src", ExportConfig{Compression: Zstd, Sign: signWith(key)})
	tests := []struct {
		name         string
		trust        Trust
		wantTrusted  bool
		wantProblems []string
	}{
		{name: "integrity only"},
		{name: "allowed signer", trust: Trust{AllowedSigners: allowedSigners("ops@example.com", key), Identity: "ops@example.com"}, wantTrusted: true},
		{name: "other identity", trust: Trust{AllowedSigners: allowedSigners("ops@example.com", key), Identity: "eve@example.com"},
			wantProblems: []string{"manifest.json.sig: signature: signature: no allowed signer matches"}},
		{name: "other key", trust: Trust{AllowedSigners: allowedSigners("ops@example.com", testSigner(t, 2)), Identity: "ops@example.com"},
			wantProblems: []string{"manifest.json.sig: signature: signature: no allowed signer matches"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := verifyBytes(t, mem, archive, VerifyConfig{Trust: tc.trust})
			if got := problemPrefixes(rep.Problems); !cmp.Equal(got, tc.wantProblems, prefixes) {
				t.Errorf("problems = %v, want prefixes %v", rep.Problems, tc.wantProblems)
			}
			want := SignatureStatus{Present: true, Signer: signature.Fingerprint(key.PublicKey()), Trusted: tc.wantTrusted, Problems: rep.Signature.Problems}
			if diff := cmp.Diff(want, rep.Signature); diff != "" {
				t.Errorf("signature status (-want +got):\n%s", diff)
			}
			if rep.Compression != "zstd" || rep.Files != 8 {
				t.Errorf("report = %+v, want zstd with 8 files", rep)
			}
		})
	}
}

// prefixes compares problem lines by prefix, so tests pin the start of a
// message, not every word of its detail.
var prefixes = cmp.Comparer(func(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) && !strings.HasPrefix(want[i], got[i]) {
			return false
		}
	}
	return true
})

func problemPrefixes(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// TestVerifyUnsignedOrStale: allowed signers require a signature, and a
// signature over another manifest is a problem for Verify and Import alike.
func TestVerifyUnsignedOrStale(t *testing.T) {
	mem := memWith(t)
	key := testSigner(t, 1)
	unsigned := exportBytes(t, mem, "/src", ExportConfig{})
	trust := Trust{AllowedSigners: allowedSigners("ops@example.com", key), Identity: "ops@example.com"}
	rep := verifyBytes(t, mem, unsigned, VerifyConfig{Trust: trust})
	if got := problemPrefixes(rep.Problems); !cmp.Equal(got, []string{"manifest.json.sig: signature: the capsule is not signed"}, prefixes) {
		t.Errorf("unsigned with allowed signers: problems = %v", got)
	}
	stale := exportBytes(t, mem, "/src", ExportConfig{Sign: func([]byte) ([]byte, error) {
		return signature.Sign([]byte("an older manifest"), key)
	}})
	rep = verifyBytes(t, mem, stale, VerifyConfig{})
	if got := problemPrefixes(rep.Problems); !cmp.Equal(got, []string{"manifest.json.sig: signature: signature: does not match the manifest"}, prefixes) {
		t.Errorf("stale signature: problems = %v", got)
	}
	_, err := importBytes(mem, stale, "/agent", ImportConfig{})
	var ve *VerifyError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Kind != KindSignature {
		t.Errorf("import of a stale signature: err = %v, want one signature problem", err)
	}
	res, err := importBytes(mem, exportBytes(t, mem, "/src", ExportConfig{Sign: signWith(key)}), "/agent", ImportConfig{Trust: trust})
	if err != nil || !res.Signed || !res.Trusted {
		t.Errorf("import of a trusted signature = %+v, %v", res, err)
	}
}

// TestVerifyReportsEveryProblem: Verify goes on past refused entries and
// reports them with the verifier's findings.
func TestVerifyReportsEveryProblem(t *testing.T) {
	files := fixtureFiles()
	manifest := string(manifestFor("test", files))
	entries := []tarEntry{file("manifest.json", manifest)}
	for p, data := range files {
		if p == "memory/working_memory.md" {
			data = "tampered"
		}
		entries = append(entries, file(p, data))
	}
	entries = append(entries,
		file("../escape", "x"),
		file("environment/spec.json", "again"),
		tarEntry{hdr: tarHeaderSymlink("memory/link", "/etc/passwd")},
		file("extra.txt", "not listed"),
	)
	rep := verifyBytes(t, vfs.NewMem(), tarOf(t, entries...), VerifyConfig{})
	want := []string{
		`../escape: archive: entry 7: unsafe path: ".." component`,
		`environment/spec.json: archive: entry 8: duplicate entry`,
		`memory/link: archive: entry 9: entry type not allowed: symbolic link`,
		`extra.txt: archive: entry 10: entry not in the capsule layout: file not in the layout`,
		`memory/working_memory.md: digest: is `,
	}
	if got := problemPrefixes(rep.Problems); !cmp.Equal(got, want, prefixes) {
		t.Errorf("problems:\n%s\nwant prefixes:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestVerifyHostile: in verify mode every hostile archive gives at least
// one archive problem, and nothing is left behind.
func TestVerifyHostile(t *testing.T) {
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			if err := mem.MkdirAll("/tmp", 0o755); err != nil {
				t.Fatal(err)
			}
			before := vfstest.Snapshot(t, mem, "/")
			rep, err := VerifyReader(mem, tc.archive(t), VerifyConfig{Verify: testVerify, TempDir: "/tmp", Limits: tc.limits})
			if err != nil {
				t.Fatal(err)
			}
			_, importErr := Import(vfs.NewMem(), tc.archive(t), "/agent", ImportConfig{Verify: testVerify, Limits: tc.limits})
			want := Problem{Kind: KindArchive, Detail: tc.wantMsg}
			var ee *EntryError
			if errors.As(importErr, &ee) {
				want = Problem{Path: ee.Name, Kind: KindArchive, Detail: ee.Detail}
			}
			found := false
			for _, p := range rep.Problems {
				found = found || (p.Kind == want.Kind && p.Path == want.Path && strings.Contains(p.Detail, want.Detail))
			}
			if !found {
				t.Errorf("no problem like %v in %v", want, rep.Problems)
			}
			if diff := cmp.Diff(before, vfstest.Snapshot(t, mem, "/")); diff != "" {
				t.Errorf("Verify left changes:\n%s", diff)
			}
		})
	}
}

// TestVerifyChargesRefusedEntries (FORMAT §9.3): in collect mode a refused
// entry is skipped, not written, but its data still counts against
// MaxTotal, so an archive of refused entries cannot make Verify read
// without bound.
func TestVerifyChargesRefusedEntries(t *testing.T) {
	body := pad(bytes.Repeat([]byte("z"), 600))
	archive := concat(rawHeader("a", 'Z', 600, nil), body, rawHeader("b", 'Z', 600, nil), body, endOfArchive)
	rep := verifyBytes(t, vfs.NewMem(), archive, VerifyConfig{Limits: Limits{MaxTotal: 1000}})
	want := []string{
		`a: archive: entry 0: entry type not allowed: type 'Z'`,
		`b: archive: entry 1: limit exceeded: entries total more than 1000 bytes`,
	}
	if got := problemPrefixes(rep.Problems); !cmp.Equal(got[:min(2, len(got))], want, prefixes) {
		t.Errorf("problems:\n%s\nwant prefixes:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
