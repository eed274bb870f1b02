package signature

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
)

// fixedKey is an ed25519 key from a fixed seed, for tests that need no
// ssh-keygen.
func fixedKey(t testing.TB, seed byte) (ssh.Signer, string) {
	t.Helper()
	s, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	return s, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
}

func TestParseAllowedSigners(t *testing.T) {
	_, pub := fixedKey(t, 1)
	utc := func(s string) time.Time {
		tm, err := time.Parse("20060102150405", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	type line struct {
		Principals, Namespaces string
		CA                     bool
		After, Before          time.Time
	}
	tests := []struct {
		name string
		in   string
		want []line
	}{
		{"plain", "ops@example.com " + pub, []line{{Principals: "ops@example.com"}}},
		{"comment and blank lines", "# keys\n\n   \nops@example.com " + pub + " laptop\n", []line{{Principals: "ops@example.com"}}},
		{"quoted principals", `"a@x,b@x" ` + pub, []line{{Principals: "a@x,b@x"}}},
		{"namespaces", `a@x namespaces="git,capsule" ` + pub, []line{{Principals: "a@x", Namespaces: "git,capsule"}}},
		{"option case", `a@x NAMESPACES="capsule" ` + pub, []line{{Principals: "a@x", Namespaces: "capsule"}}},
		{"validity utc", `a@x valid-after="20240101Z",valid-before="20250101123000Z" ` + pub,
			[]line{{Principals: "a@x", After: utc("20240101000000"), Before: utc("20250101123000")}}},
		{"cert-authority", `*@x cert-authority ` + pub, []line{{Principals: "*@x", CA: true}}},
		{"two lines", "a@x " + pub + "\nb@x " + pub, []line{{Principals: "a@x"}, {Principals: "b@x"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAllowedSigners(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var lines []line
			for _, s := range got {
				if s.Key == nil || ssh.FingerprintSHA256(s.Key) == "" {
					t.Fatalf("line %d has no key", s.Line)
				}
				lines = append(lines, line{s.Principals, s.Namespaces, s.CertAuthority, s.ValidAfter.UTC(), s.ValidBefore.UTC()})
			}
			if diff := cmp.Diff(tc.want, lines); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAllowedSignersErrors(t *testing.T) {
	_, pub := fixedKey(t, 1)
	tests := []struct {
		name, in, wantMsg string
	}{
		{"no key", "ops@example.com", "line 1: no key after the principals"},
		{"bad key", "ops@example.com ssh-ed25519 AAAAnotbase64!!", "line 1: key:"},
		{"unknown option", "a@x frobnicate " + pub, `line 1: unsupported option "frobnicate"`},
		{"bad time", `a@x valid-after="2024" ` + pub, "line 1: option valid-after"},
		{"empty namespaces", `a@x namespaces="" ` + pub, `line 1: option "namespaces" needs a value`},
		{"unterminated quote", `"a@x ` + pub, "line 1: principals: unterminated quote"},
		{"second line bad", "a@x " + pub + "\nb@x nope", "line 2:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAllowedSigners(strings.NewReader(tc.in))
			if !errors.Is(err, ErrAllowedSigners) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %v, want ErrAllowedSigners containing %q", err, tc.wantMsg)
			}
		})
	}
}

func TestMatchPatternList(t *testing.T) {
	tests := []struct {
		s, list string
		want    bool
	}{
		{"ops@example.com", "ops@example.com", true},
		{"ops@example.com", "OPS@example.com", false},
		{"ops@example.com", "*", true},
		{"ops@example.com", "*@example.com", true},
		{"ops@example.com", "?ps@example.com", true},
		{"ops@example.com", "??ps@example.com", false},
		{"ops@example.com", "dev@x,ops@*", true},
		{"ops@example.com", "*,!ops@*", false},
		{"ops@example.com", "!dev@*", false},
		{"capsule", "git,caps*", true},
		{"", "*", true},
		{"a", "", false},
		{strings.Repeat("a", 200), strings.Repeat("*a", 50) + "b", false},
	}
	for _, tc := range tests {
		if got := MatchPatternList(tc.s, tc.list); got != tc.want {
			t.Errorf("MatchPatternList(%q, %q) = %v, want %v", tc.s, tc.list, got, tc.want)
		}
	}
}

// FuzzParseAllowedSigners: any input either parses or fails with
// ErrAllowedSigners; nothing panics.
func FuzzParseAllowedSigners(f *testing.F) {
	f.Add([]byte("ops@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEm4y4WRQOPRvwPgfsU9tWwp+ZBKzB/wByIvJr8E4kbd\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		signers, err := ParseAllowedSigners(bytes.NewReader(data))
		if err != nil && !errors.Is(err, ErrAllowedSigners) {
			t.Fatalf("error without ErrAllowedSigners: %v", err)
		}
		for _, s := range signers {
			if s.Key == nil || s.Principals == "" || s.Line < 1 {
				t.Fatalf("incomplete signer %+v", s)
			}
			_ = MatchPatternList("ops@example.com", s.Principals)
		}
	})
}

// FuzzCheck: any signature bytes either check or fail with a sentinel.
func FuzzCheck(f *testing.F) {
	f.Add([]byte("{}\n"), []byte("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"))
	f.Fuzz(func(t *testing.T, manifest, sig []byte) {
		_, err := Check(manifest, sig)
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrNamespace) && !errors.Is(err, ErrCertificate) {
			t.Fatalf("error without a sentinel: %v", err)
		}
	})
}

// TestFuzzCorpus writes the seed corpora of FuzzParseAllowedSigners and
// FuzzCheck with -update (real keys and signatures); without it, it checks
// that they exist.
func TestFuzzCorpus(t *testing.T) {
	s, pub := fixedKey(t, 1)
	_, pub2 := fixedKey(t, 2)
	manifest := []byte("{\n  \"format\": 1\n}\n")
	sig, err := Sign(manifest, s)
	if err != nil {
		t.Fatal(err)
	}
	seeds := map[string]string{
		"FuzzParseAllowedSigners/plain":   fuzzFile([]byte("ops@example.com " + pub + "\n")),
		"FuzzParseAllowedSigners/options": fuzzFile([]byte("# team\n\"a@x,!b@x\" namespaces=\"git,capsule\",valid-after=\"20240101Z\" " + pub + " c\n*@x cert-authority " + pub2 + "\n")),
		"FuzzParseAllowedSigners/broken":  fuzzFile([]byte("a@x valid-before=\"99\" " + pub + "\n")),
		"FuzzCheck/valid":                 fuzzFile(manifest, sig),
		"FuzzCheck/mismatch":              fuzzFile([]byte("{}"), sig),
		"FuzzCheck/truncated":             fuzzFile(manifest, sig[:len(sig)/2]),
	}
	for name, content := range seeds {
		p := filepath.Join("testdata", "fuzz", filepath.FromSlash(name))
		if *update {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("seed %s is missing (go test ./signature -run TestFuzzCorpus -update): %v", p, err)
		}
	}
}

func fuzzFile(args ...[]byte) string {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		fmt.Fprintf(&b, "[]byte(%q)\n", a)
	}
	return b.String()
}
