package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/fixtures"
)

// restoreNodeFixture copies the node data folder name that release wrote
// (testdata/fixtures/RELEASE/nodes/NAME) from its listing
// (fixtures.Restore), its key kept private as a node requires.
func restoreNodeFixture(t *testing.T, release, name string) string {
	t.Helper()
	root := filepath.Join("..", "testdata", "fixtures", release)
	dst := filepath.Join(t.TempDir(), name)
	if err := fixtures.Restore(filepath.Join(root, "nodes", name), filepath.Join(root, "expect", "nodes", name+"-folder.txt"), dst); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dst, "node.key"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// ISSUE 12 req 9, FORMAT §11.9.3: release 0.1.0's node folder holds a
// running agent whose journal shows counter.increment calls that ran with
// no approval. Its spec is changed (a version-2 spec, committed) to require
// one; a node of this build started on the folder refuses to resume the
// agent (check_skipped, naming the tool), keeps it blocked with the reason,
// and writes nothing to its journal.
func TestNodeStartRefusesAFixtureAgentThatSkippedACheck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real node")
	}
	data := restoreNodeFixture(t, "0.1.0", "a")
	const id = "01M8RSH4FHWPQWDDEGTEEFZNY1" // "running" in expect/nodes/a-list.json
	capDir := filepath.Join(data, "agents", id, "capsule")
	spec := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(spec, []byte(`{"version":2,"workdir":"","env":{},"secrets":[],"mcp_servers":[],
"tools":{"counter.increment":{"approval":"required"}},"tool_mappings":{},
"sandbox":{"mode":"required","network":"none","hosts":[]},"lifecycle":{"ephemeral":false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	n := &releaseNode{bin: capsuleBin, dir: data}
	n.cli(t, "env", "load", capDir, spec)
	journalPath := filepath.Join(capDir, "memory", "timeline_events.jsonl")
	before, err := os.ReadFile(journalPath)
	if err != nil {
		t.Fatal(err)
	}
	n = startReleaseNode(t, capsuleBin, data)
	var st api.AgentStatus
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := json.Unmarshal([]byte(n.cli(t, "agent", "status", id, "--json", "--data", data)), &st); err != nil {
			t.Fatal(err)
		}
		if st.State == api.StateBlocked {
			break
		}
	}
	if st.State != api.StateBlocked || !strings.Contains(st.Blocked, "check_skipped") || !strings.Contains(st.Blocked, "counter.increment") {
		t.Fatalf("agent %s: %+v, want blocked by check_skipped naming counter.increment", id, st)
	}
	after, err := os.ReadFile(journalPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the refusal wrote to the journal:\n%s", after[len(before):])
	}
}
