package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node"
)

// TestNodeStatusNotReady: a node whose --canary folder holds a capsule of a
// journal version this release does not read reports it in `capsule node
// status`, as text and as JSON, and the command exits 1.
func TestNodeStatusNotReady(t *testing.T) {
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	canary := t.TempDir()
	capDir := filepath.Join(canary, "newer")
	if _, errs, code := capsuleCLI(t, "init", capDir); code != 0 {
		t.Fatal(errs)
	}
	setJournalVersion(t, filepath.Join(capDir, "manifest.json"), 99)
	data := t.TempDir()
	n, err := node.New(node.Config{Dir: data, Canary: canary})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	out, _, code := capsuleCLI(t, "node", "status", "--data", data, "--json")
	var info api.NodeInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || code != 1 {
		t.Fatalf("node status --json = %d %q (%v), want exit 1 and JSON", code, out, err)
	}
	if rd := info.Readiness; rd == nil || rd.Ready || !strings.Contains(rd.Reason, capDir) {
		t.Fatalf("readiness %+v, want not ready naming %s", rd, capDir)
	}
	out, _, code = capsuleCLI(t, "node", "status", "--data", data)
	if code != 1 || !strings.Contains(out, "not ready: canary canary "+capDir) || !strings.Contains(out, "canary embedded 0.2.0/conversation: ok") {
		t.Errorf("node status = %d %q, want exit 1, the failed canary and the passed fixtures", code, out)
	}
}

func setJournalVersion(t *testing.T, path string, v int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["schemas"].(map[string]any)["journal"] = v
	b, _ = json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A model timeout of zero or less is a usage error before the node
// starts (the config would otherwise replace it with the default).
func TestNodeModelTimeoutMustBePositive(t *testing.T) {
	for _, v := range []string{"0s", "-1m"} {
		data := t.TempDir()
		_, errs, code := capsuleCLI(t, "node", "--data", data, "--listen", "127.0.0.1:0", "--model-timeout", v)
		if code != exitUsage || !strings.Contains(errs, "--model-timeout") {
			t.Errorf("--model-timeout %s: exit %d %q, want %d naming the flag", v, code, errs, exitUsage)
		}
		if _, err := os.Stat(filepath.Join(data, "node.key")); err == nil {
			t.Errorf("--model-timeout %s: the node started and wrote its key", v)
		}
	}
}

// agent create --spec checks the file before asking the node: a missing
// or invalid file is a usage error naming the file and the problem.
func TestAgentCreateSpecIsChecked(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(bad, []byte(`{"version":2,"sandbox":{"mode":"maybe"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.json")
	// A missing file is an I/O error, as for every verb.
	for f, want := range map[string]int{bad: exitUsage, missing: exitInternal} {
		_, errs, code := capsuleCLI(t, "agent", "create", "--spec", f, "--data", t.TempDir())
		if code != want || !strings.Contains(errs, "--spec") {
			t.Errorf("--spec %s: exit %d %q, want %d naming the flag", f, code, errs, want)
		}
	}
}
