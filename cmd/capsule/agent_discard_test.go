package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/vfs"
)

// setEphemeral rewrites the environment spec of the capsule at dir (no
// node running) so that it declares the agent ephemeral.
func setEphemeral(t *testing.T, dir string) {
	t.Helper()
	c, err := capsule.Open(vfs.OS{}, dir, capsule.Config{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := c.Environment()
	if err != nil {
		t.Fatal(err)
	}
	spec.Lifecycle.Ephemeral = true
	if err := c.Commit(func(tx *capsule.Tx) error { return tx.SetEnvironment(spec) }); err != nil {
		t.Fatal(err)
	}
}

// `capsule agent discard` refuses an agent whose spec does not declare it
// ephemeral (exit 3, naming ephemeral) and starts an ephemeral one over,
// printing where its old journal is kept (FORMAT §11.9.4).
func TestAgentDiscard(t *testing.T) {
	dir := shortTempDir(t)
	n := startNode(t, dir)
	var ids []string
	for range 2 {
		out, errOut, code := capsuleCLI(t, "agent", "create", "--stopped", "--data", dir)
		if code != exitOK {
			t.Fatalf("agent create: %d %s", code, errOut)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	plain, ephemeral := ids[0], ids[1]
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	setEphemeral(t, filepath.Join(dir, "agents", ephemeral, "capsule"))
	startNode(t, dir)

	if _, errOut, code := capsuleCLI(t, "agent", "discard", plain, "--data", dir); code != exitInternal || !strings.Contains(errOut, "not_ephemeral") {
		t.Errorf("discard of an agent not ephemeral: exit %d, %s; want %d naming not_ephemeral", code, errOut, exitInternal)
	}
	out, errOut, code := capsuleCLI(t, "agent", "discard", ephemeral, "--data", dir, "--json")
	var res api.DiscardResult
	if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil {
		t.Fatalf("discard --json: exit %d, %v: %s %s", code, err, out, errOut)
	}
	if !strings.HasPrefix(res.SetAside, "discarded-") || res.Events == 0 || res.Agent.State != api.StateStopped {
		t.Errorf("discard result: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "agents", ephemeral, res.SetAside)); err != nil {
		t.Errorf("old journal not kept: %v", err)
	}
	out, errOut, code = capsuleCLI(t, "agent", "discard", ephemeral, "--data", dir)
	if code != exitOK || !strings.Contains(out, "is kept as discarded-") {
		t.Errorf("discard: exit %d: %s %s", code, out, errOut)
	}
}
