package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/vfs"
)

// capsuleCLIWith runs the CLI in-process with stdin and ctx, writing to
// out and errOut, and returns its exit code.
func capsuleCLIWith(ctx context.Context, stdin io.Reader, out, errOut io.Writer, args ...string) int {
	root := newRoot()
	root.SetIn(stdin)
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		io.WriteString(errOut, err.Error())
		return exitCode(err)
	}
	return exitOK
}

// runningAgent starts a node on a fresh data folder and creates a running
// agent on it (the counter runner journals a tool call and its result
// each step).
func runningAgent(t *testing.T) (dir string, n *node.Node, id string) {
	t.Helper()
	dir = shortTempDir(t)
	n = startNode(t, dir)
	out, errOut, code := capsuleCLI(t, "agent", "create", "--data", dir)
	if code != exitOK {
		t.Fatalf("agent create: %d %s", code, errOut)
	}
	return dir, n, strings.TrimSpace(out)
}

// agentJournal reads the journal of agent id in the node's data folder.
func agentJournal(t *testing.T, dir, id string) []journal.Event {
	t.Helper()
	events, _, err := agentlog.Read(vfs.OS{}, filepath.Join(dir, "agents", id, "capsule", filepath.FromSlash(manifest.JournalPath)))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// userTexts returns the texts of the journal's user messages.
func userTexts(events []journal.Event) []string {
	var out []string
	for _, e := range events {
		if e.Kind == journal.KindUser {
			var b journal.UserMessage
			_ = json.Unmarshal(e.Body, &b)
			out = append(out, b.Text)
		}
	}
	return out
}

// eventually polls cond until it holds, failing after a generous while.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("waited 15s for %s", what)
}

// `agent say` journals the text (from the argument or stdin) and prints
// the event's ID; bad text is a usage error and writes nothing; an
// unknown agent is an error.
func TestAgentSayCLI(t *testing.T) {
	dir, _, id := runningAgent(t)
	out, errOut, code := capsuleCLI(t, "agent", "say", id, "hello there", "--data", dir)
	if code != exitOK {
		t.Fatalf("agent say: %d %s", code, errOut)
	}
	ref := strings.TrimSpace(out)
	var stdout, stderr bytes.Buffer
	if code := capsuleCLIWith(context.Background(), strings.NewReader("from stdin\nline two\n"), &stdout, &stderr, "agent", "say", id, "-", "--data", dir); code != exitOK {
		t.Fatalf("agent say -: %d %s", code, stderr.String())
	}
	events := agentJournal(t, dir, id)
	got := userTexts(events)
	if len(got) != 2 || got[0] != "hello there" || got[1] != "from stdin\nline two" {
		t.Errorf("user messages %q, want the two said", got)
	}
	found := false
	for _, e := range events {
		found = found || e.ID == ref
	}
	if !strings.HasPrefix(ref, "sha256:") || !found {
		t.Errorf("agent say printed %q, want the new event's ID", ref)
	}
	for _, bad := range []string{"", "  "} {
		if _, _, code := capsuleCLI(t, "agent", "say", id, bad, "--data", dir); code != exitUsage {
			t.Errorf("agent say %q: exit %d, want %d", bad, code, exitUsage)
		}
	}
	stderr.Reset()
	if code := capsuleCLIWith(context.Background(), strings.NewReader("ok\xff"), &stdout, &stderr, "agent", "say", id, "-", "--data", dir); code != exitUsage || !strings.Contains(stderr.String(), "UTF-8") {
		t.Errorf("agent say of invalid UTF-8: exit %d %q, want %d naming UTF-8", code, stderr.String(), exitUsage)
	}
	if n := len(userTexts(agentJournal(t, dir, id))); n != 2 {
		t.Errorf("%d user messages after the refused ones, want 2", n)
	}
	if _, errOut, code := capsuleCLI(t, "agent", "say", "01N0SXCHAGENT0000000000000", "x", "--data", dir); code == exitOK || !strings.Contains(errOut, "01N0SXCHAGENT0000000000000") {
		t.Errorf("agent say to an unknown agent: exit %d %q", code, errOut)
	}
}

// `agent model` journals the model_change and leaves the base URL in the
// node's agent.json, not in the capsule; a model the renderer cannot
// serve is refused as a usage error.
func TestAgentModelCLI(t *testing.T) {
	dir, _, id := runningAgent(t)
	_, errOut, code := capsuleCLI(t, "agent", "model", id, "--provider", "local", "--api", "chat", "--model", "qwen3", "--base-url", "http://127.0.0.1:8080/v1", "--data", dir)
	if code != exitOK {
		t.Fatalf("agent model: %d %s", code, errOut)
	}
	var mc *journal.ModelChange
	for _, e := range agentJournal(t, dir, id) {
		if e.Kind == journal.KindModelChange {
			mc = new(journal.ModelChange)
			_ = json.Unmarshal(e.Body, mc)
		}
		if strings.Contains(string(e.Body), "8080") {
			t.Errorf("the base URL reached the journal: %s", e.Body)
		}
	}
	if mc == nil || *mc != (journal.ModelChange{Provider: "local", API: "chat", Model: "qwen3"}) {
		t.Errorf("model_change %+v, want local chat qwen3", mc)
	}
	meta, err := os.ReadFile(filepath.Join(dir, "agents", id, "agent.json"))
	if err != nil || !strings.Contains(string(meta), `"base_url": "http://127.0.0.1:8080/v1"`) {
		t.Errorf("agent.json = %s (%v), want the base URL", meta, err)
	}
	if _, _, code := capsuleCLI(t, "agent", "model", id, "--provider", "openai", "--api", "completions", "--model", "m", "--data", dir); code != exitUsage {
		t.Errorf("agent model with an unknown API: exit %d, want %d", code, exitUsage)
	}
	if _, _, code := capsuleCLI(t, "agent", "model", id, "--provider", "openai", "--data", dir); code != exitUsage {
		t.Errorf("agent model without --model: exit %d, want %d", code, exitUsage)
	}
}

// `agent log` prints the journal through the node as `capsule log` prints
// the folder's; --json prints its lines; --follow goes on with what is
// journaled later (a message said after it started) until it is stopped.
func TestAgentLogCLI(t *testing.T) {
	dir, n, id := runningAgent(t)
	if _, err := n.StopAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	capDir := filepath.Join(dir, "agents", id, "capsule")
	want, _, code := capsuleCLI(t, "log", capDir)
	if code != exitOK {
		t.Fatalf("capsule log: %d", code)
	}
	got, errOut, code := capsuleCLI(t, "agent", "log", id, "--data", dir)
	if code != exitOK || got != want {
		t.Errorf("agent log = %d %s\n%s\nwant capsule log's\n%s", code, errOut, got, want)
	}
	gotJSON, _, _ := capsuleCLI(t, "agent", "log", id, "--json", "--data", dir)
	wantJSON, _, _ := capsuleCLI(t, "log", capDir, "--json")
	if gotJSON != wantJSON || strings.Count(gotJSON, "\n") != len(agentJournal(t, dir, id)) {
		t.Errorf("agent log --json = %q, want the journal's lines %q", gotJSON, wantJSON)
	}
	if _, err := n.StartAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan int)
	go func() {
		done <- capsuleCLIWith(ctx, strings.NewReader(""), &out, io.Discard, "agent", "log", id, "--follow", "--json", "--data", dir)
	}()
	eventually(t, "the history to be printed", func() bool { return strings.HasPrefix(out.String(), wantJSON) })
	if _, _, code := capsuleCLI(t, "agent", "say", id, "said while following", "--data", dir); code != exitOK {
		t.Fatal("agent say failed")
	}
	eventually(t, "the live message", func() bool { return strings.Contains(out.String(), "said while following") })
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("agent log --follow exit %d, want 0", code)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		e, err := journal.ParseLine([]byte(line))
		if err != nil || seen[e.ID] {
			t.Fatalf("followed line %q: %v (seen before: %v)", line, err, seen[e.ID])
		}
		seen[e.ID] = true
	}
}

// `agent chat` reads messages from a pipe, says each, shows what the
// agent journals (here the counter's tool calls) without echoing its own
// messages, and at the end of stdin exits 0 with the agent running.
func TestAgentChatCLI(t *testing.T) {
	dir, n, id := runningAgent(t)
	pr, pw := io.Pipe()
	var out, errOut syncBuffer
	done := make(chan int)
	go func() {
		done <- capsuleCLIWith(context.Background(), pr, &out, &errOut, "agent", "chat", id, "--data", dir)
	}()
	if _, err := io.WriteString(pw, "hello chat\n\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the message in the journal", func() bool {
		texts := userTexts(agentJournal(t, dir, id))
		return len(texts) == 1 && texts[0] == "hello chat"
	})
	eventually(t, "tool calls shown", func() bool {
		return strings.Contains(out.String(), "[tool_call]") && strings.Contains(out.String(), "[tool_result]")
	})
	if _, err := n.SetModel(context.Background(), id, api.ModelRequest{Provider: "ollama", Model: "llama3"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the model change shown", func() bool { return strings.Contains(out.String(), "[model_change]") })
	pw.Close()
	if code := <-done; code != exitOK {
		t.Fatalf("agent chat exit %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String(), "hello chat") {
		t.Errorf("chat echoed its own message:\n%s", out.String())
	}
	if st, err := n.Agent(context.Background(), id); err != nil || st.State != api.StateRunning {
		t.Errorf("after the chat the agent is %+v (%v), want running", st, err)
	}
}

// Ctrl-C (SIGINT) leaves a chat of a real process with exit code 0 and
// the agent running.
func TestAgentChatInterrupt(t *testing.T) {
	dir, n, id := runningAgent(t)
	pr, pw, err := os.Pipe() // kept open: only the signal ends the chat
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	defer pr.Close()
	c := exec.Command(os.Args[0], "agent", "chat", id, "--data", dir)
	c.Env = append(os.Environ(), runAsCLI+"=1")
	var out syncBuffer
	c.Stdin, c.Stdout, c.Stderr = pr, &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the chat to show the agent's steps", func() bool { return strings.Contains(out.String(), "[tool_call]") })
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = c.Wait()
	var ee interface{ ExitCode() int }
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 0) {
		t.Fatalf("chat after SIGINT: %v\n%s", err, out.String())
	}
	if st, err := n.Agent(context.Background(), id); err != nil || st.State != api.StateRunning {
		t.Errorf("after the chat the agent is %+v (%v), want running", st, err)
	}
}
