package node

import (
	"context"
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
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
)

// buildCounter builds the counter MCP server of mcp/testdata.
func buildCounter(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "counter")
	if out, err := exec.Command("go", "build", "-o", bin, "../mcp/testdata/counter").CombinedOutput(); err != nil {
		t.Fatalf("build the counter server: %v\n%s", err, out)
	}
	return bin
}

// setServers replaces the MCP servers of the stopped agent's spec and
// asks for no sandbox: the test servers are binaries in a temporary folder
// that write a counter outside the workspace, which a sandbox forbids
// (TestMCPServerRunsInTheSandbox runs one inside). The nodes must allow it
// (nodeOpts.allowUnsandboxed).
func setServers(t *testing.T, n *Node, id string, servers ...envspec.Tool) {
	t.Helper()
	a, err := n.getTenant(id)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	editSpecLocked(t, n, a, func(spec *envspec.Spec) {
		spec.Tools = servers
		spec.Sandbox.Mode = sandboxModeNone
	})
}

// serverProcs returns the working directories of this process's children
// that run bin, by PID.
func serverProcs(t *testing.T, bin string) map[int]string {
	t.Helper()
	out := map[int]string{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); exe != bin {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		out[pid] = cwd
	}
	return out
}

// waitServers waits up to 10 s for the servers running bin in the
// workspace ws to number want.
func waitServers(t *testing.T, bin, ws string, want int) {
	t.Helper()
	got := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		got = 0
		for _, cwd := range serverProcs(t, bin) {
			if cwd == ws {
				got++
			}
		}
		if got == want {
			return
		}
	}
	t.Fatalf("%d servers run in %s; want %d", got, ws, want)
}

// A server the target cannot start refuses the prepare: the move rolls
// back with the reason and the agent runs on the source again.
func TestPrepareRefusesAnMCPServerThatDoesNotStart(t *testing.T) {
	cl := newCluster(t, nodeOpts{allowUnsandboxed: true}, nodeOpts{allowUnsandboxed: true})
	a, b := cl.nodes[0], cl.nodes[1]
	id := createAgent(t, a, "")
	if _, err := a.StopAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	setServers(t, a, id, envspec.Tool{Name: "gone", Transport: "stdio", Command: "capsule-test-no-such-mcp-server",
		Effect: envspec.EffectExternal, Approval: envspec.ApprovalRequired})
	if _, err := a.StartAgent(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	res := move(t, a, b, id)
	want := `mcp: server gone did not start: exec: "capsule-test-no-such-mcp-server": executable file not found in $PATH`
	if res.Outcome != api.OutcomeRolledBack || !strings.Contains(res.Reason, want) {
		t.Fatalf("move = %+v, want rolled back with %q", res, want)
	}
	waitSteps(t, a, id, 3)
	waitNoStaging(t, cl, a, id)
	cl.checkHolder(a, id)
}

// The agent loop offers the MCP tools beside the workspace tools and runs
// them on the server it started; a stop stops the server, a move starts
// it on the target (prepare checks it, the runner starts it) and the
// source's is gone.
func TestMCPServersRunWithTheAgentLoop(t *testing.T) {
	bin := buildCounter(t)
	// A path the spec's credential check does not take for a key.
	dir := filepath.Join(os.TempDir(), "capsule-mcp-test-"+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	counter := filepath.Join(dir, "count")
	g := newGate()
	opts := nodeOpts{agentLoop: true, providers: g.client, endpoint: "http://127.0.0.1:9", allowUnsandboxed: true}
	cl := newCluster(t, opts, opts)
	a, b := cl.nodes[0], cl.nodes[1]
	st, err := a.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "m", Model: planner, Task: "bump", Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	setServers(t, a, st.ID, envspec.Tool{Name: "c", Transport: "stdio", Command: bin, Args: []string{counter},
		Effect: envspec.EffectExternal, Approval: envspec.ApprovalNever})
	if _, err := a.StartAgent(t.Context(), st.ID); err != nil {
		t.Fatal(err)
	}
	waitChan(t, g.calls, "the first model call")
	if body := g.requests()[0].Body; !strings.Contains(string(body), `"c_bump_`) || !strings.Contains(string(body), `"read_file"`) {
		t.Fatalf("the request does not offer c.bump beside the workspace tools:\n%s", body)
	}
	g.release <- []provider.Output{{Kind: journal.KindToolCall, Body: journal.ToolCall{CallID: "call_1", Name: "c.bump", Arguments: json.RawMessage(`{"note":"n"}`)}}}
	waitChan(t, g.calls, "the call after the tool")
	g.release <- []provider.Output{{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Text: "bumped"}}}
	waitActivity(t, a, st.ID, activityIdle)
	var results []string
	for _, e := range journalOf(t, a, st.ID) {
		if e.Kind == journal.KindToolResult {
			var r journal.ToolResult
			if err := json.Unmarshal(e.Body, &r); err != nil {
				t.Fatal(err)
			}
			results = append(results, r.Content)
		}
	}
	if len(results) != 1 || results[0] != "count 1" {
		t.Fatalf("tool results %q; want [count 1]", results)
	}
	wsA := filepath.Join(a.cfg.Dir, "agents", st.ID, workDir)
	waitServers(t, bin, wsA, 1)
	if _, err := a.StopAgent(t.Context(), st.ID); err != nil {
		t.Fatal(err)
	}
	waitServers(t, bin, wsA, 0)
	if _, err := a.StartAgent(context.Background(), st.ID); err != nil {
		t.Fatal(err)
	}
	waitServers(t, bin, wsA, 1)
	if res := move(t, a, b, st.ID); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	waitServers(t, bin, wsA, 0)
	waitServers(t, bin, filepath.Join(b.cfg.Dir, "agents", st.ID, workDir), 1)
	if n := strings.Count(readFile(t, counter), "\n"); n != 1 {
		t.Fatalf("the counter has %d lines; want 1", n)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
