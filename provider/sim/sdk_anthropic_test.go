package sim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentcapsule/capsule/provider/sim"
)

func anthropicTool(name string, schema map[string]any) anthropic.ToolUnionParam {
	var req []string
	for _, r := range schema["required"].([]any) {
		req = append(req, r.(string))
	}
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: name,
		InputSchema: anthropic.ToolInputSchemaParam{Properties: schema["properties"], Required: req}}}
}

// The official anthropic-sdk-go client runs a two-call tool loop with
// thinking enabled, whole and streamed, sending each answer back with
// Message.ToParam: the thinking blocks and signatures the simulator
// issued are accepted back.
func TestAnthropicSDKToolLoop(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[streamed], func(t *testing.T) {
			s, url := start(t, sim.Config{})
			client := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("capsule-sim"), option.WithMaxRetries(0))
			params := anthropic.MessageNewParams{Model: sim.Planner, MaxTokens: 4096, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
				System:   []anthropic.TextBlockParam{{Text: "Be terse."}},
				Tools:    []anthropic.ToolUnionParam{anthropicTool("read_file", readFileSchema), anthropicTool("search", searchSchema)},
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(loopRequest))}}
			var calls []call
			var answer string
			for step := 0; step < 4 && answer == ""; step++ {
				msg := anthropicStep(t, client, params, streamed)
				if len(msg.Content) == 0 || msg.Content[0].Type != "thinking" || msg.Content[0].Signature == "" {
					t.Fatalf("step %d: answer does not start with a signed thinking block: %s", step, msg.RawJSON())
				}
				if msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
					t.Errorf("usage = %+v, want counts", msg.Usage)
				}
				params.Messages = append(params.Messages, msg.ToParam())
				var results []anthropic.ContentBlockParamUnion
				for _, b := range msg.Content {
					switch b.Type {
					case "tool_use":
						calls = append(calls, call{b.Name, string(b.Input)})
						results = append(results, anthropic.NewToolResultBlock(b.ID, runTool(t, b.Name, b.Input), false))
					case "text":
						answer += b.Text
					}
				}
				if len(results) > 0 {
					if msg.StopReason != "tool_use" {
						t.Errorf("stop_reason = %q, want tool_use", msg.StopReason)
					}
					params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
				}
			}
			wantLoop(t, calls, answer)
			wantLog(t, s, "anthropic", sim.Planner, 3)
		})
	}
}

func anthropicStep(t *testing.T, client anthropic.Client, params anthropic.MessageNewParams, streamed bool) *anthropic.Message {
	t.Helper()
	ctx := context.Background()
	if !streamed {
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	st := client.Messages.NewStreaming(ctx, params)
	var msg anthropic.Message
	events := 0
	for st.Next() {
		if err := msg.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
		events++
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if events < 5 {
		t.Errorf("stream had %d events, want a full message stream", events)
	}
	return &msg
}

// A thinking block signed for another model is refused as Anthropic
// refuses it, through the SDK: a 400 invalid_request_error.
func TestAnthropicSDKForeignSignature(t *testing.T) {
	s, url := start(t, sim.Config{})
	client := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("capsule-sim"), option.WithMaxRetries(0))
	sig := s.Sign("anthropic", sim.Echo, "seed", "I will read the file.")
	_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: sim.Planner, MaxTokens: 4096,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Tools:    []anthropic.ToolUnionParam{anthropicTool("read_file", readFileSchema)},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock(loopRequest)),
			anthropic.NewAssistantMessage(anthropic.NewThinkingBlock(sig, "I will read the file."),
				anthropic.NewToolUseBlock("toolu_1", map[string]any{"path": "src/main.go"}, "read_file")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "package main", false)),
		}})
	var apiErr *anthropic.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Error(), "Invalid `signature` in `thinking` block") {
		t.Fatalf("err = %v, want a 400 for an invalid signature", err)
	}
}
