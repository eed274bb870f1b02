package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/envspec"
)

// The node is killed (SIGKILL) while an external MCP tool runs: after its
// line in a counter file outside the workspace is written and before the
// call answers. After the restart the call is not run again (the counter
// holds one line), its result says the outcome is unknown, the model is
// told and answers, status shows the unresolved effect, and an operator's
// record of it (capsule agent effect) clears it. The server is a real MCP
// server (mcp/testdata/counter) run unsandboxed, since it writes outside
// the workspace (spec sandbox none, node --allow-unsandboxed).
func TestKillDuringExternalMCPTool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real node processes; skipped with -short")
	}
	// Paths the spec's credential check does not take for a key (a
	// t.TempDir name looks random).
	dir := filepath.Join(os.TempDir(), "capsule-e2e-mcp-"+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, counter := filepath.Join(dir, "counter"), filepath.Join(dir, "count")
	if out, err := exec.Command("go", "build", "-o", bin, "../mcp/testdata/counter").CombinedOutput(); err != nil {
		t.Fatalf("build the counter server: %v\n%s", err, out)
	}
	s := startSim(t)
	c := newClusterArgs(t, 1, []string{"--model-endpoint", s.url, "--allow-unsandboxed"})
	n1 := c.procs[0]

	spec := envspec.Default()
	spec.Sandbox.Mode = "none"
	spec.Tools = []envspec.Tool{{Name: "c", Transport: "stdio", Command: bin, Args: []string{counter},
		Effect: envspec.EffectExternal, Approval: envspec.ApprovalNever}}
	raw, err := spec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	specFile := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(specFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out := c.must("agent", "create", "--name", "mcp", "--stopped", "--from", smallWorkspace(t), "--spec", specFile,
		"--data", n1.dir, "--json")
	var st api.AgentStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("agent create --json: %v: %q", err, out)
	}
	id := st.ID
	c.agent = id
	c.setModel(n1, id, claudePlanner)
	c.say(n1, id, "Please call c.bump with note=once linger_ms=60000.")
	c.must("agent", "start", id, "--data", n1.dir)
	if !waitFile(counter, 30*time.Second) {
		t.Fatalf("the tool did not write its line within 30 s\n%s", tail(n1.log, 30))
	}
	before := liveEvents(t, n1, id)
	if got := countKind(before, "tool_dispatch"); got != 1 {
		t.Fatalf("%d tool_dispatch events before the kill, want 1 (journaled and synced before the tool ran)", got)
	}
	c.kill(n1)
	c.restart(n1)
	c.waitAnswers(n1, id, 1)
	time.Sleep(500 * time.Millisecond) // a wrong rerun would have written by now
	if b, _ := os.ReadFile(counter); strings.Count(string(b), "\n") != 1 {
		t.Fatalf("the counter holds %q: the dispatched call ran again", b)
	}
	var sts api.AgentStatus
	if err := json.Unmarshal([]byte(c.must("agent", "status", id, "--json", "--data", n1.dir)), &sts); err != nil {
		t.Fatal(err)
	}
	if len(sts.Unresolved) != 1 {
		t.Fatalf("unresolved effects %+v, want the bump", sts.Unresolved)
	}
	call := sts.Unresolved[0].CallID
	events := liveEvents(t, n1, id)
	rs := results(events, "c.bump")
	if len(rs) != 1 || !rs[0].Interrupted || rs[0].Outcome != "unknown" || !strings.Contains(rs[0].Content, "the outcome is unknown") {
		t.Fatalf("c.bump results %+v, want one interrupted with outcome unknown", rs)
	}
	c.must("agent", "effect", id, call, "--done", "--note", "checked the counter by hand", "--data", n1.dir)
	var after api.AgentStatus // a fresh value: omitted members would keep the old ones
	if err := json.Unmarshal([]byte(c.must("agent", "status", id, "--json", "--data", n1.dir)), &after); err != nil {
		t.Fatal(err)
	}
	if len(after.Unresolved) != 0 {
		var kinds []string
		for _, e := range liveEvents(t, n1, id) {
			kinds = append(kinds, string(e.Kind))
		}
		t.Fatalf("still unresolved after agent effect: %+v; journal %v", after.Unresolved, kinds)
	}
	c.afterRun(n1, id, s)
	t.Logf("killed during c.bump; after the restart: one line in the counter, result outcome unknown, effect recorded")
}
