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
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/vfs"
)

// setWorkingMemory commits text as the working memory of the capsule at
// dir (no node running) and, when limit > 0, sets the spec's cap.
func setWorkingMemory(t *testing.T, dir, text string, limit int) {
	t.Helper()
	c, err := capsule.Open(vfs.OS{}, dir, capsule.Config{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := c.Environment()
	if err != nil {
		t.Fatal(err)
	}
	if limit > 0 {
		spec.Memory = &envspec.Memory{WorkingMaxBytes: limit}
	}
	err = c.Commit(func(tx *capsule.Tx) error {
		if err := tx.SetEnvironment(spec); err != nil {
			return err
		}
		return tx.SetWorkingMemory([]byte(text))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// showJSON runs `capsule memory show ... --json` and decodes it.
func showJSON(t *testing.T, args ...string) api.WorkingMemory {
	t.Helper()
	out := mustCLI(t, append([]string{"memory", "show", "--json"}, args...)...)
	var m api.WorkingMemory
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return m
}

// `capsule memory show DIR` prints a capsule folder's working memory as
// stored (nothing when empty), --json with its size, cap and digest; a
// working memory that does not match the manifest exits 1.
func TestMemoryShowDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	mustCLI(t, "init", dir)
	if out := mustCLI(t, "memory", "show", dir); out != "" {
		t.Errorf("empty working memory printed %q", out)
	}
	const notes = "# Notes\n- no newline at the end"
	setWorkingMemory(t, dir, notes, 4096)
	if out := mustCLI(t, "memory", "show", dir); out != notes {
		t.Errorf("printed %q, want %q", out, notes)
	}
	m := showJSON(t, dir)
	want := api.WorkingMemory{Bytes: len(notes), Limit: 4096, Digest: string(digest.FromBytes([]byte(notes))), Text: notes}
	if m.Agent == "" || m.Bytes != want.Bytes || m.Limit != want.Limit || m.Digest != want.Digest || m.Text != want.Text {
		t.Errorf("--json: %+v, want %+v", m, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory", "working_memory.md"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := capsuleCLI(t, "memory", "show", dir); code != exitVerify || !strings.Contains(errOut, "does not match the manifest") {
		t.Errorf("tampered: exit %d, %s; want %d", code, errOut, exitVerify)
	}
}

// `capsule memory show AGENT --data` asks the node: the working memory
// its capsule holds, with the default cap when the spec sets none; an
// agent the node does not have is an error.
func TestMemoryShowAgent(t *testing.T) {
	dir := shortTempDir(t)
	n := startNode(t, dir)
	id := strings.TrimSpace(mustCLI(t, "agent", "create", "--stopped", "--data", dir))
	if m := showJSON(t, id, "--data", dir); m.Agent != id || m.Text != "" || m.Limit != envspec.DefaultWorkingMaxBytes {
		t.Errorf("a new agent: %+v", m)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	const notes = "- the deploy key rotates on Fridays\n"
	setWorkingMemory(t, filepath.Join(dir, "agents", id, "capsule"), notes, 0)
	startNode(t, dir)
	if out := mustCLI(t, "memory", "show", id, "--data", dir); out != notes {
		t.Errorf("printed %q, want %q", out, notes)
	}
	if m := showJSON(t, id, "--data", dir); m.Bytes != len(notes) || m.Digest != string(digest.FromBytes([]byte(notes))) {
		t.Errorf("--json: %+v", m)
	}
	if _, errOut, code := capsuleCLI(t, "memory", "show", "01JAAAAAAAAAAAAAAAAAAAAAAA", "--data", dir); code != exitInternal || !strings.Contains(errOut, "not found") {
		t.Errorf("unknown agent: exit %d, %s", code, errOut)
	}
}

// `capsule render DIR` prints the request as it would be sent: with the
// folder's working memory pinned after the instructions (FORMAT §6.4).
func TestRenderCarriesWorkingMemory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent")
	mustCLI(t, "init", dir)
	mustCLI(t, "log", "append", dir, "--kind", "user", "--body", `{"text":"hi"}`)
	args := []string{"render", dir, "--provider", "openai-chat", "--model", "gpt-4.1"}
	if out := mustCLI(t, args...); strings.Contains(out, "Working memory") {
		t.Errorf("an empty working memory rendered a block:\n%s", out)
	}
	setWorkingMemory(t, dir, "- say hello back\n", 0)
	out := mustCLI(t, args...)
	var body struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[0].Content != "Working memory (your notes; edit them with the memory tool):\n- say hello back\n" || body.Messages[1].Content != "hi" {
		t.Errorf("render: %+v", body.Messages)
	}
}
