package node

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/api"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func TestMoveCommitsAndRunsOnTarget(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := c.nodes[0], c.nodes[1]
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("hello\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n"), 0o755)
	id := createAgent(t, a, ws)
	res := move(t, a, b, id)
	if res.Outcome != api.OutcomeCommitted {
		t.Fatalf("outcome = %+v", res)
	}
	t.Logf("move: %+v", res)
	if res.FrozenMS <= 0 || res.RoundTripsFrozen < 3 {
		t.Errorf("frozen_ms = %d, round trips frozen = %d", res.FrozenMS, res.RoundTripsFrozen)
	}
	waitSteps(t, b, id, 3)
	c.checkHolder(b, id)
	st, err := a.Agent(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != api.StateRetired || st.Successor != string(b.ID()) {
		t.Errorf("source status = %+v, want retired with successor %s", st, b.ID())
	}
	// And back: the second move skips the blobs the first left behind.
	res2 := move(t, b, a, id)
	if res2.Outcome != api.OutcomeCommitted {
		t.Fatalf("move back: %+v", res2)
	}
	t.Logf("move back: %+v", res2)
	if res2.BlobsSkipped == 0 {
		t.Errorf("move back skipped no blobs: %+v", res2)
	}
	waitSteps(t, a, id, 3)
	c.checkHolder(a, id)
}
