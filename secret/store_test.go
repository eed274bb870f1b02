package secret_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/secret"
	"github.com/agentcapsule/capsule/secret/secrettest"
	"github.com/agentcapsule/capsule/vfs"
)

func TestMemConformance(t *testing.T) {
	secrettest.Run(t, &secret.Mem{}, secrettest.UniqueName)
}

func TestFileConformance(t *testing.T) {
	t.Run("mem", func(t *testing.T) {
		secrettest.Run(t, secret.NewFile(vfs.NewMem(), "/data/secrets.json"), secrettest.UniqueName)
	})
	t.Run("os", func(t *testing.T) {
		secrettest.Run(t, secret.NewFile(nil, filepath.Join(t.TempDir(), "data", "secrets.json")), secrettest.UniqueName)
	})
}

// TestFileReadsOldNodesFiles reads a secrets.json as operators wrote it for
// nodes before package secret existed, and checks what Set writes back.
func TestFileReadsOldNodesFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, secret.FileName)
	if err := os.WriteFile(path, []byte(`{"API_TOKEN":"s3cr3t-value","OTHER":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := secret.NewFile(nil, path)
	if v, err := f.Get("API_TOKEN"); err != nil || v != "s3cr3t-value" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if err := f.Set("NEW_KEY", "new-value-1"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("after Set: mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	b, _ := os.ReadFile(path)
	want := "{\n  \"API_TOKEN\": \"s3cr3t-value\",\n  \"NEW_KEY\": \"new-value-1\",\n  \"OTHER\": \"x\"\n}\n"
	if string(b) != want {
		t.Errorf("file after Set:\n%s\nwant\n%s", b, want)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("folder holds %d entries after Set, want only secrets.json (no temporary file left)", len(ents))
	}
}

func TestFileRefusesOpenModeAndBadJSON(t *testing.T) {
	fsys := vfs.NewMem()
	f := secret.NewFile(fsys, "/data/secrets.json")
	if err := fsys.MkdirAll("/data", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFile(fsys, "/data/secrets.json", []byte(`{"A":"s3cr3t-value"}`), 0o640); err != nil {
		t.Fatal(err)
	}
	_, err := f.Get("A")
	if !errors.Is(err, secret.ErrFileMode) {
		t.Errorf("group-readable file: Get err = %v, want ErrFileMode", err)
	}
	if err := f.Set("B", "value-b-1"); !errors.Is(err, secret.ErrFileMode) {
		t.Errorf("group-readable file: Set err = %v, want ErrFileMode", err)
	}
	for _, body := range []string{`{"A":"s3cr3t-value",`, `["s3cr3t-value"]`, `{"A":1}`, `null`} {
		_ = fsys.Chmod("/data/secrets.json", 0o600)
		if err := vfs.WriteFile(fsys, "/data/secrets.json", []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := f.Names()
		if err == nil || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("body %s: err = %v, want an error that does not quote the file", body, err)
		}
	}
}

func TestEnv(t *testing.T) {
	env := map[string]string{"CAPSULE_SECRET_TOKEN": "env-value-1", "CAPSULE_SECRET_EMPTY": "", "OTHER": "x"}
	e := secret.Env{
		Getenv: func(k string) string { return env[k] },
		Environ: func() []string {
			return []string{"CAPSULE_SECRET_TOKEN=env-value-1", "CAPSULE_SECRET_EMPTY=", "CAPSULE_SECRET_bad-name=1", "OTHER=x"}
		},
	}
	if v, err := e.Get("TOKEN"); err != nil || v != "env-value-1" {
		t.Errorf("Get TOKEN = %q, %v", v, err)
	}
	if _, err := e.Get("EMPTY"); !errors.Is(err, secret.ErrNotFound) {
		t.Errorf("Get EMPTY: err = %v, want ErrNotFound (an empty variable holds nothing)", err)
	}
	if err := e.Set("TOKEN", "v"); !errors.Is(err, secret.ErrReadOnly) {
		t.Errorf("Set: err = %v, want ErrReadOnly", err)
	}
	if names, _ := e.Names(); !slices.Equal(names, []string{"TOKEN"}) {
		t.Errorf("Names = %v, want [TOKEN]", names)
	}
}

func TestOpenChoosesTheStore(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/with", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFile(fsys, "/with/secrets.json", []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, env, dir, want string
	}{
		{"", "", "/none", secret.KindKeyring},
		{"", "", "", secret.KindKeyring},
		{"", "", "/with", secret.KindFile},
		{"", "pass", "/with", secret.KindPass},
		{"file", "pass", "/none", secret.KindFile},
		{"keyring", "", "/with", secret.KindKeyring},
	} {
		s, err := secret.Config{Kind: c.kind, Dir: c.dir, FS: fsys, Getenv: func(k string) string {
			if k == secret.StoreEnv {
				return c.env
			}
			return ""
		}}.Open()
		if err != nil || s.Kind() != c.want {
			t.Errorf("kind %q, $%s=%q, dir %s: got %v, %v; want %s", c.kind, secret.StoreEnv, c.env, c.dir, s, err, c.want)
		}
	}
	if _, err := secret.Open("vault", "/x"); err == nil || !strings.Contains(err.Error(), "keyring, pass or file") {
		t.Errorf("unknown kind: err = %v", err)
	}
	if _, err := (secret.Config{Kind: "file", FS: fsys}).Open(); err == nil {
		t.Error("file store without a data folder opened")
	}
}

func TestValidName(t *testing.T) {
	cases := map[string]bool{
		"A": true, "_x1": true, "OPENAI_API_KEY": true, strings.Repeat("a", 256): true,
		"": false, "1A": false, "A-B": false, "A.B": false, "é": false, strings.Repeat("a", 257): false,
	}
	for name, want := range cases {
		if got := secret.ValidName(name); got != want {
			t.Errorf("ValidName(%.20q) = %v, want %v", name, got, want)
		}
	}
}
