package node

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/schema"
)

// FORMAT §11.1: agent.json names its version and writer; one written by
// 0.1.0 (no "v") reads as version 1.
func TestAgentMetaNamesItsVersion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a")
	n := newNode(t, dir, nodeOpts{})
	id := createAgent(t, n, "")
	b, err := os.ReadFile(filepath.Join(dir, "agents", id, record.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"v": 1`, `"release": "` + schema.Release + `"`, `"run": true`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("agent.json %s lacks %s", b, want)
		}
	}
	old, err := record.DecodeMeta([]byte("{\n  \"name\": \"x\",\n  \"run\": true\n}\n"))
	if err != nil || old != (record.Meta{Name: "x", Run: true}) {
		t.Errorf("0.1.0's agent.json: %+v, %v", old, err)
	}
}

// FORMAT §11.4: an agent.json of a version this release does not read
// blocks the agent with a reason naming the kind, the version and the
// writer; the file keeps every byte, whatever the operator asks.
func TestAgentMetaNewerVersionBlocks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a")
	n := newNode(t, dir, nodeOpts{})
	id := createAgent(t, n, "")
	waitSteps(t, n, id, 2)
	addr := n.Addr()
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(dir, "agents", id, record.MetaFile)
	future := []byte(`{"v": 2, "release": "0.9.0", "name": "x", "run": true, "budget": {"usd": 5}}` + "\n")
	if err := os.WriteFile(meta, future, 0o600); err != nil {
		t.Fatal(err)
	}
	n = newNodeAt(t, dir, addr, nodeOpts{})
	ctx := context.Background()
	st, err := n.Agent(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "blocked" || !strings.Contains(st.Blocked, "agent_meta schema version 2 (written by 0.9.0) is newer") {
		t.Fatalf("status %+v; want blocked naming agent_meta version 2 by 0.9.0", st)
	}
	if _, err := n.StartAgent(ctx, id); err == nil {
		t.Error("start of a blocked agent accepted")
	}
	if _, err := n.StopAgent(ctx, id); err == nil {
		t.Error("stop of an agent whose agent.json cannot be read accepted")
	}
	if err := n.RemoveAgent(ctx, id); err == nil {
		t.Error("rm of a blocked agent accepted")
	}
	if b, _ := os.ReadFile(meta); !bytes.Equal(b, future) {
		t.Errorf("agent.json changed to %s", b)
	}
	if st, _ := n.Agent(ctx, id); st.Steps != 0 {
		t.Errorf("the agent ran %d steps", st.Steps)
	}
}
