package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/journal/logfile"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node"
)

// shortTempDir is a fresh data folder with a short path: a unix socket
// path is at most 108 bytes, too few for t.TempDir() on some machines.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cap")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startNode runs a node in-process on the data folder dir, serving the
// local API on dir's socket and peers on a loopback port, until the test ends.
func startNode(t *testing.T, dir string) *node.Node {
	t.Helper()
	n, err := node.New(node.Config{Dir: dir, Listen: "127.0.0.1:0", StepInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	return n
}

// An agent the node refuses to run is "blocked" with the reason in
// `agent list`, `agent status` and their --json (issue 10 item 10): here
// its journal holds an event under an epoch above the holder's.
func TestAgentBlockedShownByCLI(t *testing.T) {
	dir := shortTempDir(t)
	n := startNode(t, dir)
	out, errOut, code := capsuleCLI(t, "agent", "create", "--stopped", "--data", dir)
	if code != exitOK {
		t.Fatalf("agent create: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := logfile.Open(logfile.Config{Path: filepath.Join(dir, "agents", id, "capsule", filepath.FromSlash(manifest.JournalPath)), Epoch: 9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append("elsewhere", journal.KindFrozen, 9, "", journal.Frozen{Reason: "future"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	startNode(t, dir)

	out, errOut, code = capsuleCLI(t, "agent", "list", "--data", dir)
	if code != exitOK || !strings.Contains(out, "REASON") {
		t.Fatalf("agent list: %d %q %s", code, out, errOut)
	}
	line := out[strings.Index(out, id):]
	if !strings.Contains(line, " blocked ") || !strings.Contains(line, "above the holder epoch 1") {
		t.Errorf("agent list shows no blocked agent with its reason:\n%s", out)
	}
	out, _, code = capsuleCLI(t, "agent", "status", id, "--data", dir)
	if code != exitOK || !strings.Contains(out, "state:   blocked") || !strings.Contains(out, "blocked: ") {
		t.Errorf("agent status: %d\n%s", code, out)
	}
	out, _, code = capsuleCLI(t, "agent", "status", id, "--data", dir, "--json")
	var st api.AgentStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != exitOK {
		t.Fatalf("agent status --json: %d %v\n%s", code, err, out)
	}
	if st.State != api.StateBlocked || !strings.Contains(st.Blocked, "epoch 9") {
		t.Errorf("agent status --json: state %q, blocked %q", st.State, st.Blocked)
	}
	if _, errOut, code := capsuleCLI(t, "agent", "start", id, "--data", dir); code == exitOK || !strings.Contains(errOut, "journal refused") {
		t.Errorf("agent start of a blocked agent: %d %s", code, errOut)
	}
}

// `capsule agent rm` reaches the node and is refused for an agent the node
// holds, with the reason (issue 10 item 6; node tests cover the removal).
func TestAgentRmRefusesHeldAgent(t *testing.T) {
	dir := shortTempDir(t)
	startNode(t, dir)
	out, errOut, code := capsuleCLI(t, "agent", "create", "--stopped", "--data", dir)
	if code != exitOK {
		t.Fatalf("agent create: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	if _, errOut, code := capsuleCLI(t, "agent", "rm", id, "--data", dir); code == exitOK || !strings.Contains(errOut, "this node holds it") {
		t.Errorf("agent rm of a held agent: exit %d, %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "agents", id, "capsule")); err != nil {
		t.Errorf("the refused rm removed the capsule: %v", err)
	}
	if _, errOut, code := capsuleCLI(t, "agent", "rm", "01J0000000000000000000000Z", "--data", dir); code == exitOK || !strings.Contains(errOut, "not found") {
		t.Errorf("agent rm of an unknown agent: exit %d, %s", code, errOut)
	}
}
