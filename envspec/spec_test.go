package envspec

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func example() *Spec {
	s := Default()
	s.Workdir = "src"
	s.Env = map[string]string{"LANG": "C.UTF-8", "PATH": "/usr/local/bin:/usr/bin:/bin", "LOG_LEVEL": "debug"}
	s.Secrets = []string{"OPENAI_API_KEY", "GITHUB_TOKEN"}
	s.Tools = []Tool{{Name: "filesystem", Transport: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."},
		Effect: EffectWorkspace, Approval: ApprovalNever},
		{Name: "github", Transport: "stdio", Command: "github-mcp-server", Args: []string{"stdio"}, Env: map[string]string{"GITHUB_HOST": "github.com"},
			Secrets: []string{"GITHUB_TOKEN"}, Effect: EffectExternal, Approval: ApprovalRequired, Tools: map[string]Rule{"get_issue": {Effect: EffectRead, Approval: ApprovalNever}}}}
	s.Builtins = map[string]Rule{"run": {Approval: ApprovalRequired}}
	s.Sandbox = Sandbox{Mode: "required", Network: NetworkHosts, Hosts: []string{"api.github.com:443"}, Packages: []string{"git", "python3"}, CPUs: 2, MemoryMB: 4096}
	return s
}

// FORMAT §6.1: Marshal is deterministic and the example round-trips.
func TestGoldenRoundTrip(t *testing.T) {
	got, err := example().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "example.current.spec.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./envspec -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("(-golden +got):\n%s", diff)
	}
	back, err := Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(example().normalized(), back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := Parse(mustMarshal(t, Default())); err != nil {
		t.Errorf("default spec: %v", err)
	}
}

func mustMarshal(t *testing.T, s *Spec) []byte {
	t.Helper()
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FORMAT §6.2: names that contain a secret word are refused, naming the fix.
func TestSecretNames(t *testing.T) {
	for _, name := range []string{"TOKEN", "GITHUB_TOKEN", "api_key", "MyApiKey", "DB_PASSWORD", "PASSWD", "AWS_SECRET_ACCESS_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_PRIVATE"} {
		err := Default().SetEnv(name, "x")
		var se *SecretNameError
		if !errors.As(err, &se) || !errors.Is(err, ErrSecretName) {
			t.Errorf("SetEnv(%s): got %v, want a SecretNameError", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "capsule env secret add DIR "+name) {
			t.Errorf("error %q does not say how to declare the secret", err)
		}
	}
	for _, name := range []string{"LANG", "PATH", "HOME", "LOG_LEVEL", "TOKENIZERS_PARALLELISM_X"[:0] + "TZ"} {
		if err := Default().SetEnv(name, "x"); err != nil {
			t.Errorf("SetEnv(%s): %v", name, err)
		}
	}
}

// FORMAT §6.2: values that look like credentials are refused; the error
// never contains the value.
func TestCredentialValues(t *testing.T) {
	secretish := map[string]string{
		"pem":        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
		"openai":     "sk-proj-Qw3rTy8uIoPaSdFgHjKlZxCvBnM12345",
		"anthropic":  "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
		"github":     "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
		"gh fine":    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
		"slack":      "xoxb-1234567890-abcdefghij",
		"aws":        "AKIAIOSFODNN7EXAMPLE",
		"google":     "AIzaSyA1234567890abcdefghijklmnopqrstuv",
		"gitlab":     "glpat-abcdefghij0123456789",
		"hf":         "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
		"jwt":        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"url pass":   "postgres://app:hunter2hunter2@db.internal:5432/app",
		"random":     "Bearer hqmM9q5zFg3h7A2dIfP38ivts8dANfwx",
		"aws secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	}
	for name, v := range secretish {
		err := Default().SetEnv("SOME_VAR", v)
		if !errors.Is(err, ErrSecretValue) {
			t.Errorf("%s: got %v, want ErrSecretValue", name, err)
			continue
		}
		for _, part := range strings.Fields(strings.NewReplacer("/", " ", ":", " ", "@", " ", ".", " ").Replace(v)) {
			if len(part) >= 8 && strings.Contains(err.Error(), part) {
				t.Errorf("%s: error %q echoes part of the value", name, err)
			}
		}
	}
	plain := []string{
		"C.UTF-8", "/usr/local/bin:/usr/bin:/bin", "/home/alice/Projects/MyService2/build/Output",
		"https://api.example.com/v1/Chat/Completions2024", "ThisIsAVeryLongCamelCaseIdentifierName1",
		"1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36", "kubernetes.io/ServiceAccount/Namespace2/DefaultToken",
		"postgres://db.internal:5432/app", "sk-learn", "debug", "01J2Z3K4M5N6P7Q8R9S0T1V2W3", "",
	}
	for _, v := range plain {
		if err := Default().SetEnv("SOME_VAR", v); err != nil {
			t.Errorf("SetEnv(%q): %v (false positive)", v, err)
		}
	}
}

// FORMAT §6: Parse names every problem, schema and secret rules alike.
func TestParseProblems(t *testing.T) {
	base := string(mustMarshal(t, example()))
	v1b, err := os.ReadFile(filepath.Join("testdata", "example.spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	v1 := string(v1b)
	tests := []struct {
		name string
		in   string
		want []string
		is   error
	}{
		{"syntax", `{"version": 2,,}`, []string{"1:15: JSON syntax"}, ErrInvalid},
		{"duplicate", `{"version": 2, "version": 2}`, []string{"1:16: duplicate key \"version\""}, ErrInvalid},
		{"schema", strings.Replace(strings.Replace(base, `"hosts",`, `"internet",`, 1), `"version": 2`, `"version": 3`, 1),
			[]string{"/sandbox/network", "/version"}, ErrInvalid},
		{"unknown member", strings.Replace(base, `"version": 2`, `"version": 2, "extra": true`, 1), []string{"extra"}, ErrInvalid},
		{"version 1 schema", strings.Replace(v1, `"loopback"`, `"internet"`, 1), []string{"/sandbox/network"}, ErrInvalid},
		{"version 1 secret", strings.Replace(v1, `"debug"`, `"ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"`, 1), []string{"/env/LOG_LEVEL"}, ErrSecretValue},
		{"bad name", strings.Replace(base, `"LANG"`, `"1LANG"`, 1), []string{"/env"}, ErrInvalid},
		{"secret name in file", strings.Replace(base, `"LANG"`, `"MY_TOKEN"`, 1), []string{"/env/MY_TOKEN", "capsule env secret add DIR MY_TOKEN"}, ErrSecretName},
		{"secret value in file", strings.Replace(base, `"debug"`, `"ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"`, 1), []string{"/env/LOG_LEVEL", "GitHub token"}, ErrSecretValue},
		{"secret in tool args", strings.Replace(base, `"stdio"
      ]`, `"--token=ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
      ]`, 1), []string{"/mcp_servers/1/args/0"}, ErrSecretValue},
		{"variable beside a secret", strings.Replace(base, `"LANG"`, `"GITHUB_HOSTNAME"`, 1) + "", nil, nil},
		{"variable and secret", strings.Replace(base, `"GITHUB_TOKEN",`, `"GITHUB_TOKEN", "LANG",`, 1), []string{"/env/LANG"}, ErrConflict},
		{"tool variable and secret", strings.Replace(base, `"secrets": [
        "GITHUB_TOKEN"`, `"secrets": ["GITHUB_HOST", "GITHUB_TOKEN"`, 1), []string{"/mcp_servers/1/env/GITHUB_HOST"}, ErrConflict},
		{"workdir escapes", strings.Replace(base, `"workdir": "src"`, `"workdir": "../x"`, 1), []string{"/workdir"}, ErrInvalid},
		{"too large", `{"pad":"` + strings.Repeat("x", MaxSize) + `"}`, []string{"the limit is"}, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if tc.is == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestSecretsEdit(t *testing.T) {
	s := Default()
	if added, err := s.AddSecret("OPENAI_API_KEY"); err != nil || !added {
		t.Fatalf("AddSecret: %v %v", added, err)
	}
	if added, _ := s.AddSecret("OPENAI_API_KEY"); added {
		t.Error("second AddSecret reported a new name")
	}
	if err := s.SetEnv("LANG", "C"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSecret("LANG"); !errors.Is(err, ErrConflict) {
		t.Errorf("AddSecret of a variable: got %v, want ErrConflict", err)
	}
	if _, err := s.AddSecret("1BAD"); !errors.Is(err, ErrInvalid) {
		t.Errorf("AddSecret(1BAD): got %v", err)
	}
	if !s.RemoveSecret("OPENAI_API_KEY") || s.RemoveSecret("OPENAI_API_KEY") {
		t.Error("RemoveSecret")
	}
	if !s.UnsetEnv("LANG") || s.UnsetEnv("LANG") {
		t.Error("UnsetEnv")
	}
	if diff := cmp.Diff(Default(), s); diff != "" {
		t.Error(diff)
	}
}
