package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
)

// printTool offers one tool, print_token, that prints the secret it was
// handed, the way a shell tool would print an environment variable: it
// stands in for the run tool of the sandbox (issue 14).
type printTool struct{ value string }

func (p printTool) Tools() []render.Tool {
	return []render.Tool{{Name: "print_token", Description: "print the deploy token", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}
}

func (p printTool) Run(context.Context, string, json.RawMessage) agent.ToolOutput {
	return agent.ToolOutput{Content: "TOKEN=" + p.value + "\n" + strings.Repeat("x", 10) + p.value}
}

// syncBuf is a log sink tests can read.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) Bytes() []byte               { s.mu.Lock(); defer s.mu.Unlock(); return bytes.Clone(s.b.Bytes()) }

// An agent whose tool prints its secret, and whose provider key is a
// secret too: no byte the node wrote (capsule, journal, records, logs,
// status, watch stream) holds either value; the journal holds the
// marker instead.
func TestSecretsNeverLeaveTheHost(t *testing.T) {
	const token = "tok-5f2a9c81e0d7b3"
	const key = "sk-sim-0c9d8e7f6a5b"
	s, url := startSim(t)
	logs := &syncBuf{}
	dir := filepath.Join(t.TempDir(), "n")
	env := map[string]string{"CAPSULE_SECRET_DEPLOY_TOKEN": token, "CAPSULE_SECRET_OPENAI_API_KEY": key}
	n := newNode(t, dir, nodeOpts{agentLoop: true, endpoint: url, env: env,
		logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		tools:  func(string) (agent.Toolbox, io.Closer, error) { return printTool{token}, io.NopCloser(nil), nil }})
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "s", Model: planner, Task: "Please print_token.", Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := n.getTenant(st.ID)
	c, err := capsule.Open(n.fsys, a.capsule(), capsule.Config{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := c.Environment()
	if err != nil {
		t.Fatal(err)
	}
	spec.Secrets = append(spec.Secrets, "DEPLOY_TOKEN")
	if err := c.Commit(func(tx *capsule.Tx) error { return tx.SetEnvironment(spec) }); err != nil {
		t.Fatal(err)
	}
	var watched bytes.Buffer
	wctx, stopWatch := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.WatchAgent(wctx, st.ID, api.WatchOptions{}, func(m api.WatchMessage) error {
			b, _ := json.Marshal(m)
			watched.Write(b)
			return nil
		})
	}()
	if _, err := n.StartAgent(t.Context(), st.ID); err != nil {
		t.Fatal(err)
	}
	events := waitAnswer(t, n, st.ID, 0)
	var result journal.ToolResult
	for _, e := range events {
		if e.Kind == journal.KindToolResult {
			_ = json.Unmarshal(e.Body, &result)
		}
	}
	if !strings.Contains(result.Content, "[secret DEPLOY_TOKEN]") {
		t.Fatalf("the tool result is not scrubbed to the marker: %q", result.Content)
	}
	if got := s.Requests(); len(got) == 0 {
		t.Fatal("the endpoint got no request")
	}
	status, _ := n.Agent(t.Context(), st.ID)
	if _, err := n.StopAgent(t.Context(), st.ID); err != nil {
		t.Fatal(err)
	}
	stopWatch()
	<-done
	sb, _ := json.Marshal(status)
	outputs := map[string][]byte{"logs": logs.Bytes(), "status": sb, "watch": watched.Bytes()}
	for _, r := range s.Requests() {
		outputs["request body to the endpoint"] = append(outputs["request body to the endpoint"], r.Body...)
	}
	for what, b := range outputs {
		for _, v := range []string{token, key} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s holds a secret value", what)
			}
		}
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, v := range []string{token, key} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s holds a secret value", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
