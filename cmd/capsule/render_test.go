package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
)

// renderCapsule writes a capsule folder holding only a journal: a user
// turn and a Claude tool call the machine never answered.
func renderCapsule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriter("m1")
	claude := journal.Producer{Provider: "anthropic", API: "messages", Model: "claude-sonnet-4-6"}
	var buf bytes.Buffer
	for _, ev := range []struct {
		kind journal.Kind
		body any
	}{
		{journal.KindInstruction, journal.Instruction{Role: "system", Text: "Be terse."}},
		{journal.KindUser, journal.UserMessage{Text: "Weather in Paris?"}},
		{journal.KindToolCall, journal.ToolCall{CallID: "toolu_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`), Producer: claude, Step: "s1"}},
	} {
		e, err := w.Next(ev.kind, 1, "2026-01-02T03:04:05Z", ev.body)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(journal.Encode(e))
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "memory", "timeline_events.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRenderCommand(t *testing.T) {
	dir := renderCapsule(t)
	tools := filepath.Join(t.TempDir(), "tools.json")
	os.WriteFile(tools, []byte(`[{"name":"get_weather","description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`), 0o644)

	out, errOut, code := capsuleCLI(t, "render", dir, "--provider", "anthropic", "--model", "claude-sonnet-4-6", "--tools", tools, "--report")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatalf("stdout is not one JSON body: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"is_error":true`) || !strings.Contains(out, `"system":[{"text":"Be terse."`) {
		t.Errorf("body = %s", out)
	}
	if !strings.Contains(errOut, "synthesized error result: toolu_1 (get_weather)") || !strings.Contains(errOut, "tokens:") {
		t.Errorf("report = %s", errOut)
	}

	out, _, code = capsuleCLI(t, "render", dir, "--provider", "gemini", "--model", "gemini-3-pro", "--json")
	var both struct {
		Request map[string]any `json:"request"`
		Report  struct {
			Synthesized []map[string]string     `json:"synthesized"`
			Tokens      struct{ Estimated int } `json:"tokens"`
		} `json:"report"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &both) != nil || both.Request["contents"] == nil || len(both.Report.Synthesized) != 1 || both.Report.Tokens.Estimated == 0 {
		t.Errorf("--json: exit %d, %s", code, out)
	}
}

func TestRenderCommandErrors(t *testing.T) {
	dir := renderCapsule(t)
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"render", dir, "--model", "x"}, exitUsage},
		{[]string{"render", dir, "--provider", "bard", "--model", "x"}, exitUsage},
		{[]string{"render", dir, "--provider", "ollama", "--model", "x", "--window", "-1"}, exitUsage},
		{[]string{"render", dir, "--provider", "ollama", "--model", "x", "--tools", "/nonexistent.json"}, exitInternal}, // a missing path is 3 for every verb (issue 10 item 13),
		{[]string{"render", filepath.Join(dir, "missing"), "--provider", "ollama", "--model", "x"}, exitInternal},
	}
	for _, c := range cases {
		if _, errOut, code := capsuleCLI(t, c.args...); code != c.code {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, code, c.code, errOut)
		}
	}
	bad := t.TempDir()
	os.MkdirAll(filepath.Join(bad, "memory"), 0o755)
	os.WriteFile(filepath.Join(bad, "memory", "timeline_events.jsonl"), []byte("{not a line}\n"), 0o644)
	if _, _, code := capsuleCLI(t, "render", bad, "--provider", "ollama", "--model", "x"); code != exitVerify {
		t.Errorf("a journal that does not parse: exit %d, want %d", code, exitVerify)
	}
}

// Without --provider and --model, render targets the journal's newest
// model_change; a journal that names none is a usage error that says so.
func TestRenderDefaultsToCurrentModel(t *testing.T) {
	dir := renderCapsule(t)
	_, errOut, code := capsuleCLI(t, "render", dir)
	if code != exitUsage || !strings.Contains(errOut, "names no model") {
		t.Fatalf("no model_change: exit %d: %s", code, errOut)
	}
	jpath := filepath.Join(dir, "memory", "timeline_events.jsonl")
	data, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	events, err := journal.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriter("m1", events...)
	for _, mc := range []journal.ModelChange{
		{Provider: "openai", API: "chat", Model: "gpt-4.1"},
		{Provider: "anthropic", API: "messages", Model: "claude-sonnet-4-6"},
	} {
		e, err := w.Next(journal.KindModelChange, 1, "", mc)
		if err != nil {
			t.Fatal(err)
		}
		w.Observe(&e)
		data = append(append(data, journal.Encode(e)...), '\n')
	}
	if err := os.WriteFile(jpath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := capsuleCLI(t, "render", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"api":"anthropic"`) || !strings.Contains(out, `"model":"claude-sonnet-4-6"`) {
		t.Fatalf("not rendered for the newest model_change: %s", out)
	}
}
