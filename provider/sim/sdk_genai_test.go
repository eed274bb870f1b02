package sim_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/agentcapsule/capsule/provider/sim"
)

func genaiClient(t *testing.T, url string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "capsule-sim", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: url}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func genaiConfig() *genai.GenerateContentConfig {
	return &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText("Be terse.", genai.RoleUser),
		ThinkingConfig:    &genai.ThinkingConfig{IncludeThoughts: true},
		Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
			{Name: "read_file", ParametersJsonSchema: readFileSchema}, {Name: "search", ParametersJsonSchema: searchSchema}}}},
	}
}

// The official google.golang.org/genai client runs a two-call tool loop
// against generateContent and streamGenerateContent, sending each model
// turn back as received: the thought signatures the simulator issued are
// accepted back.
func TestGenaiSDKToolLoop(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[streamed], func(t *testing.T) {
			s, url := start(t, sim.Config{})
			client := genaiClient(t, url)
			contents := []*genai.Content{genai.NewContentFromText(loopRequest, genai.RoleUser)}
			var calls []call
			var answer string
			for step := 0; step < 4 && answer == ""; step++ {
				model := genaiStep(t, client, contents, streamed)
				contents = append(contents, model)
				var responses []*genai.Part
				signed := false
				for _, p := range model.Parts {
					signed = signed || len(p.ThoughtSignature) > 0
					switch {
					case p.FunctionCall != nil:
						args, _ := json.Marshal(p.FunctionCall.Args)
						calls = append(calls, call{p.FunctionCall.Name, string(args)})
						responses = append(responses, genai.NewPartFromFunctionResponse(p.FunctionCall.Name, map[string]any{"output": runTool(t, p.FunctionCall.Name, args)}))
					case !p.Thought:
						answer += p.Text
					}
				}
				if !signed {
					t.Errorf("step %d: model turn carries no thought signature", step)
				}
				if len(responses) > 0 {
					contents = append(contents, genai.NewContentFromParts(responses, genai.RoleUser))
				}
			}
			wantLoop(t, calls, answer)
			wantLog(t, s, "gemini", sim.Planner, 3)
			for _, r := range s.Requests() {
				if r.Stream != streamed {
					t.Errorf("request %d (%s): stream = %v, want %v", r.Seq, r.Path, r.Stream, streamed)
				}
			}
		})
	}
}

// genaiStep returns the model's turn, its streamed parts merged in order.
func genaiStep(t *testing.T, client *genai.Client, contents []*genai.Content, streamed bool) *genai.Content {
	t.Helper()
	ctx := context.Background()
	if !streamed {
		res, err := client.Models.GenerateContent(ctx, sim.Planner, contents, genaiConfig())
		if err != nil {
			t.Fatal(err)
		}
		if res.UsageMetadata == nil || res.UsageMetadata.PromptTokenCount == 0 {
			t.Errorf("usage = %+v, want counts", res.UsageMetadata)
		}
		return res.Candidates[0].Content
	}
	turn := &genai.Content{Role: genai.RoleModel}
	chunks := 0
	for res, err := range client.Models.GenerateContentStream(ctx, sim.Planner, contents, genaiConfig()) {
		if err != nil {
			t.Fatal(err)
		}
		chunks++
		for _, p := range res.Candidates[0].Content.Parts {
			last := len(turn.Parts) - 1
			if last >= 0 && p.Text != "" && p.FunctionCall == nil && !p.Thought && turn.Parts[last].Text != "" && !turn.Parts[last].Thought {
				turn.Parts[last].Text += p.Text // one text part, streamed in pieces
				continue
			}
			if p.Text == "" && p.FunctionCall == nil && len(p.ThoughtSignature) == 0 {
				continue
			}
			turn.Parts = append(turn.Parts, p)
		}
	}
	if chunks < 2 {
		t.Errorf("stream had %d chunks, want several", chunks)
	}
	return turn
}

// A function call turn without a thought signature is refused as Gemini
// 3 refuses it, through the SDK: 400 INVALID_ARGUMENT.
func TestGenaiSDKMissingSignature(t *testing.T) {
	_, url := start(t, sim.Config{})
	client := genaiClient(t, url)
	contents := []*genai.Content{
		genai.NewContentFromText(loopRequest, genai.RoleUser),
		genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionCall("read_file", map[string]any{"path": "src/main.go"})}, genai.RoleModel),
		genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionResponse("read_file", map[string]any{"output": "package main"})}, genai.RoleUser),
	}
	_, err := client.Models.GenerateContent(context.Background(), sim.Planner, contents, genaiConfig())
	var apiErr genai.APIError
	if !asError(err, &apiErr) || apiErr.Code != 400 || apiErr.Status != "INVALID_ARGUMENT" || !strings.Contains(apiErr.Message, "missing a thought_signature") {
		t.Fatalf("err = %v, want 400 INVALID_ARGUMENT for a missing thought signature", err)
	}
}
