package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
	"github.com/agentcapsule/capsule/tool"
)

// chatMessage is what the test reads of an OpenAI Chat Completions
// answer's message.
type chatMessage struct {
	Content   string `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// The simulator's planner, offered these tools' declarations, builds
// arguments these tools accept: for each request the loop runs to the
// planner's answer (render with render/wire for openai-chat, post, run the
// calls, journal the results), and no call is refused for its arguments.
func TestPlannerDrivesTools(t *testing.T) {
	hs := httptest.NewServer(sim.New(sim.Config{}))
	t.Cleanup(hs.Close)
	for _, tc := range []struct {
		request string
		calls   []string // the tools called, in order
		clean   bool     // every call succeeds
		file    string   // a file the calls wrote ("memory/..." for the memory file)
		content string   // its content then
	}{
		{"read_file path=notes.txt", []string{"read_file"}, true, "ws/notes.txt", "hello world\n"},
		{"list_files, then search pattern=hello", []string{"list_files", "search"}, true, "", ""},
		{`write_file path=out/new.txt content="hi there", then read_file path=out/new.txt`, []string{"write_file", "read_file"}, true, "ws/out/new.txt", "hi there"},
		{"edit_file path=notes.txt old_string=hello new_string=goodbye", []string{"edit_file"}, true, "ws/notes.txt", "goodbye world\n"},
		{`memory action=replace content="the bug is in parse.go"`, []string{"memory"}, true, "memory/working_memory.md", "the bug is in parse.go"},
		{"look at docs/guide.md and tell me what it says", []string{"read_file", "list_files", "search", "write_file"}, false, "", ""},
		{"do what you can, in parallel", []string{"read_file", "list_files", "search", "write_file"}, false, "", ""},
	} {
		t.Run(tc.request, func(t *testing.T) {
			base := t.TempDir()
			ws, mem := filepath.Join(base, "ws"), filepath.Join(base, "memory")
			for _, d := range []string{filepath.Join(ws, "docs"), mem} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for p, c := range map[string]string{"notes.txt": "hello world\n", "docs/guide.md": "# Guide\n"} {
				if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w, err := tool.OpenWorkspace(ws, tool.Options{MemoryFile: filepath.Join(mem, "working_memory.md")})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			called, answer := loop(t, hs.URL, w, tc.request, tc.clean)
			if strings.Join(called, " ") != strings.Join(tc.calls, " ") {
				t.Errorf("calls %v, want %v", called, tc.calls)
			}
			if answer == "" {
				t.Error("the planner gave no final answer")
			}
			if tc.file != "" {
				if b, err := os.ReadFile(filepath.Join(base, tc.file)); err != nil || string(b) != tc.content {
					t.Errorf("%s = %q (%v), want %q", tc.file, b, err, tc.content)
				}
			}
		})
	}
}

// loop runs the planner on request until it answers, running each call
// it makes, and returns the tools called and the answer.
func loop(t *testing.T, base string, w *tool.Workspace, request string, clean bool) ([]string, string) {
	t.Helper()
	target := render.Target{API: render.OpenAIChat, Model: sim.Planner, Tools: w.Tools()}
	j := (&rendertest.Journal{}).System("You work in a small project.").User(request)
	var called []string
	for step := 1; step <= 10; step++ {
		msg := post(t, base, j, target)
		if len(msg.ToolCalls) == 0 {
			return called, msg.Content
		}
		for _, c := range msg.ToolCalls {
			name, args := c.Function.Name, c.Function.Arguments
			called = append(called, name)
			r := w.Run(context.Background(), name, json.RawMessage(args))
			if strings.Contains(r.Content, "invalid arguments") || strings.Contains(r.Content, "not valid JSON") || strings.Contains(r.Content, "unknown tool") {
				t.Errorf("%s %s refused for its arguments: %s", name, args, r.Content)
			}
			if clean && r.IsError {
				t.Errorf("%s %s: %s", name, args, r.Content)
			}
			j.Call(target.Producer(), fmt.Sprintf("s%d", step), c.ID, name, args)
			if r.IsError {
				j.Failed(c.ID, name, r.Content)
			} else {
				j.Result(c.ID, name, r.Content)
			}
		}
	}
	t.Fatal("the planner did not answer within 10 steps")
	return nil, ""
}

// post renders j for target, posts it to the simulator and returns the
// answer's message.
func post(t *testing.T, base string, j *rendertest.Journal, target render.Target) chatMessage {
	t.Helper()
	body, _, err := wire.Render(j.Events(), target)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var a struct {
		Choices []struct {
			Message chatMessage `json:"message"`
		} `json:"choices"`
	}
	if res.StatusCode != 200 || json.Unmarshal(b, &a) != nil || len(a.Choices) != 1 {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	return a.Choices[0].Message
}

// The declarations pass every provider's request rules as the simulator
// enforces them, and the planner calls the named tool on every API.
func TestDeclarationsEveryAPI(t *testing.T) {
	hs := httptest.NewServer(sim.New(sim.Config{}))
	t.Cleanup(hs.Close)
	w, err := tool.OpenWorkspace(t.TempDir(), tool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	paths := map[render.API]string{render.OpenAIChat: "/v1/chat/completions", render.OpenAIResponses: "/v1/responses",
		render.Anthropic: "/v1/messages", render.Gemini: "/v1beta/models/" + sim.Planner + ":generateContent", render.Ollama: "/api/chat"}
	j := (&rendertest.Journal{}).System("You work in a small project.").User("edit_file path=a.txt old_string=x new_string=y")
	for _, api := range render.APIs {
		body, _, err := wire.Render(j.Events(), render.Target{API: api, Model: sim.Planner, Tools: w.Tools()})
		if err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		res, err := http.Post(hs.URL+paths[api], "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), "edit_file") || !strings.Contains(string(b), "old_string") {
			t.Errorf("%s: status %d: %s", api, res.StatusCode, b)
		}
	}
}
