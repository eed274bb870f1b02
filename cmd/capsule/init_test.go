package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := capsuleCLI(t, args...)
	if code != exitOK {
		t.Fatalf("capsule %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// The format verbs end to end: init, snapshot, checkout, verify, inspect.
func TestInitSnapshotCheckoutVerifyInspect(t *testing.T) {
	tmp := t.TempDir()
	dir, ws, out := filepath.Join(tmp, "agent"), filepath.Join(tmp, "ws"), filepath.Join(tmp, "out")
	var created struct {
		Agent struct{ ID, Name string }
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "init", dir, "--name", "bot", "--json")), &created); err != nil || created.Agent.Name != "bot" || len(created.Agent.ID) != 26 {
		t.Fatalf("init --json: %+v %v", created, err)
	}
	if _, _, code := capsuleCLI(t, "init", dir); code != exitInternal {
		t.Errorf("init over a capsule: exit %d", code)
	}
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("src/main.go", filepath.Join(ws, "link"))
	if _, _, code := capsuleCLI(t, "snapshot", dir); code != exitUsage {
		t.Errorf("snapshot without --from: exit %d, want %d", code, exitUsage)
	}
	if got := mustCLI(t, "snapshot", dir, "--from", ws, "-q"); !strings.Contains(got, "recorded 2 files") {
		t.Errorf("snapshot: %q", got)
	}
	mustCLI(t, "checkout", dir, "--to", out, "-q")
	if b, err := exec.Command("diff", "-r", "--no-dereference", ws, out).CombinedOutput(); err != nil {
		t.Errorf("diff -r: %v\n%s", err, b)
	}
	if got := mustCLI(t, "verify", dir, "-q"); !strings.Contains(got, ": ok (5 files, 2 blobs") {
		t.Errorf("verify: %q", got)
	}
	var info struct {
		Agent    struct{ ID string }
		Snapshot struct{ Files, Symlinks int }
		Blobs    struct{ Count int }
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "inspect", dir, "--json")), &info); err != nil ||
		info.Agent.ID != created.Agent.ID || info.Snapshot.Files != 2 || info.Snapshot.Symlinks != 1 || info.Blobs.Count != 2 {
		t.Errorf("inspect --json: %+v %v", info, err)
	}
	if got := mustCLI(t, "inspect", dir); !strings.Contains(got, "holder     none") {
		t.Errorf("inspect: %q", got)
	}
}

// capsule verify reports every problem, one line each, and exits 1.
func TestVerifyReportsEveryProblem(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	mustCLI(t, "init", dir)
	os.WriteFile(filepath.Join(dir, "memory", "working_memory.md"), []byte("tampered"), 0o644)
	os.Remove(filepath.Join(dir, "memory", "vector_index", "index.json"))
	os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("x"), 0o644)
	out, _, code := capsuleCLI(t, "verify", dir, "-q")
	if code != exitVerify {
		t.Fatalf("exit %d, want %d\n%s", code, exitVerify, out)
	}
	for _, want := range []string{
		"memory/vector_index/index.json: missing: ",
		"memory/working_memory.md: size: ",
		"stray.txt: unexpected: ",
		": 3 problem(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var rep struct {
		OK       bool
		Problems []struct{ Path, Kind, Detail string }
	}
	out, _, _ = capsuleCLI(t, "verify", dir, "--json", "-q")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.OK || len(rep.Problems) != 3 {
		t.Errorf("verify --json: %+v %v", rep, err)
	}
	if _, _, code := capsuleCLI(t, "verify", filepath.Join(dir, "nope")); code != exitInternal {
		t.Errorf("verify of a missing path: exit %d", code)
	}
}

// FORMAT §6.2 through the CLI: secret-looking names and values are refused
// with exit 2 and never echoed; each change is a commit that verifies.
func TestEnvCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	mustCLI(t, "init", dir)
	mustCLI(t, "env", "set", dir, "LANG=C.UTF-8", "TZ=UTC")
	mustCLI(t, "env", "secret", "add", dir, "OPENAI_API_KEY")
	mustCLI(t, "env", "unset", dir, "TZ")
	_, errs, code := capsuleCLI(t, "env", "set", dir, "GITHUB_TOKEN=abc")
	if code != exitUsage || !strings.Contains(errs, "capsule env secret add DIR GITHUB_TOKEN") {
		t.Errorf("secret name: exit %d, %q", code, errs)
	}
	const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"
	_, errs, code = capsuleCLI(t, "env", "set", dir, "MODEL_ENDPOINT="+key)
	if code != exitUsage || strings.Contains(errs, key) || strings.Contains(errs, "abcdefghij") {
		t.Errorf("secret value: exit %d, %q", code, errs)
	}
	got := mustCLI(t, "env", "show", dir)
	want := "env     LANG=C.UTF-8\nsecret  OPENAI_API_KEY (value supplied by the host)\nsandbox network none\n"
	if got != want {
		t.Errorf("env show:\n%s\nwant:\n%s", got, want)
	}
	spec := mustCLI(t, "env", "show", dir, "--json")
	spec = strings.Replace(spec, `"network": "none",
    "hosts": []`, `"network": "hosts", "hosts": ["api.example:443"], "cpus": 2`, 1)
	f := filepath.Join(t.TempDir(), "spec.json")
	os.WriteFile(f, []byte(spec), 0o644)
	mustCLI(t, "env", "load", dir, f)
	if got := mustCLI(t, "env", "show", dir); !strings.Contains(got, "network hosts (api.example:443), 2 CPUs") {
		t.Errorf("after load: %q", got)
	}
	mustCLI(t, "verify", dir, "-q")
	b, _ := os.ReadFile(filepath.Join(dir, "environment", "spec.json"))
	if strings.Contains(string(b), key) {
		t.Error("a refused value reached spec.json")
	}
}
