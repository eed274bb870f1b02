package sim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/agentcapsule/capsule/provider/sim"
)

func ollamaTools(t *testing.T) api.Tools {
	t.Helper()
	var tools api.Tools
	for _, d := range []struct {
		name   string
		schema map[string]any
	}{{"read_file", readFileSchema}, {"search", searchSchema}} {
		b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": d.name, "parameters": d.schema}})
		var tool api.Tool
		if err := json.Unmarshal(b, &tool); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool)
	}
	return tools
}

// The official ollama/api client runs a two-call tool loop against
// /api/chat with thinking on, streamed (NDJSON) and not.
func TestOllamaSDKToolLoop(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[streamed], func(t *testing.T) {
			s, base := start(t, sim.Config{})
			u, _ := url.Parse(base)
			client := api.NewClient(u, http.DefaultClient)
			req := &api.ChatRequest{Model: sim.Planner, Stream: &streamed, Tools: ollamaTools(t), Think: &api.ThinkValue{Value: true},
				Messages: []api.Message{{Role: "system", Content: "Be terse."}, {Role: "user", Content: loopRequest}}}
			var calls []call
			var answer string
			for step := 0; step < 4 && answer == ""; step++ {
				msg, final := api.Message{Role: "assistant"}, api.ChatResponse{}
				chunks := 0
				err := client.Chat(context.Background(), req, func(r api.ChatResponse) error {
					chunks++
					msg.Content += r.Message.Content
					msg.Thinking += r.Message.Thinking
					msg.ToolCalls = append(msg.ToolCalls, r.Message.ToolCalls...)
					final = r
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if !final.Done || final.PromptEvalCount == 0 || final.EvalCount == 0 || msg.Thinking == "" {
					t.Errorf("step %d: final chunk %+v, thinking %q: want done, counts and thinking", step, final, msg.Thinking)
				}
				if streamed && chunks < 2 || !streamed && chunks != 1 {
					t.Errorf("step %d: %d chunks (stream %v)", step, chunks, streamed)
				}
				req.Messages = append(req.Messages, msg)
				for _, tc := range msg.ToolCalls {
					args, _ := json.Marshal(tc.Function.Arguments)
					calls = append(calls, call{tc.Function.Name, string(args)})
					req.Messages = append(req.Messages, api.Message{Role: "tool", ToolName: tc.Function.Name, ToolCallID: tc.ID, Content: runTool(t, tc.Function.Name, args)})
				}
				if len(msg.ToolCalls) == 0 {
					answer = msg.Content
				}
			}
			wantLoop(t, calls, answer)
			wantLog(t, s, "ollama", sim.Planner, 3)
		})
	}
}
