package sim_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentcapsule/capsule/provider/sim"
)

func openaiClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("capsule-sim"), option.WithMaxRetries(0))
}

func chatTools() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "read_file", Parameters: readFileSchema}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "search", Parameters: searchSchema}),
	}
}

// The official openai-go client runs a tool loop of two calls against
// the simulator's Chat Completions, whole and streamed.
func TestOpenAIChatSDKToolLoop(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[streamed], func(t *testing.T) {
			s, url := start(t, sim.Config{})
			client := openaiClient(url)
			params := openai.ChatCompletionNewParams{Model: sim.Planner, Tools: chatTools(),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be terse."), openai.UserMessage(loopRequest)}}
			var calls []call
			var answer string
			for step := 0; step < 4 && answer == ""; step++ {
				msg := chatStep(t, client, params, streamed)
				params.Messages = append(params.Messages, msg.ToParam())
				for _, tc := range msg.ToolCalls {
					calls = append(calls, call{tc.Function.Name, tc.Function.Arguments})
					params.Messages = append(params.Messages, openai.ToolMessage(runTool(t, tc.Function.Name, []byte(tc.Function.Arguments)), tc.ID))
				}
				if len(msg.ToolCalls) == 0 {
					answer = msg.Content
				}
			}
			wantLoop(t, calls, answer)
			wantLog(t, s, "openai-chat", sim.Planner, 3)
		})
	}
}

func chatStep(t *testing.T, client openai.Client, params openai.ChatCompletionNewParams, streamed bool) openai.ChatCompletionMessage {
	t.Helper()
	ctx := context.Background()
	if !streamed {
		res, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if res.Usage.PromptTokens == 0 || res.Usage.CompletionTokens == 0 {
			t.Errorf("usage = %+v, want counts", res.Usage)
		}
		return res.Choices[0].Message
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for st.Next() {
		acc.AddChunk(st.Current())
		chunks++
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 3 || acc.Usage.TotalTokens == 0 {
		t.Errorf("stream: %d chunks, usage %+v; want several chunks and a usage chunk", chunks, acc.Usage)
	}
	return acc.Choices[0].Message
}

// The official client runs a two-call loop against Responses, stateless
// with encrypted reasoning, replaying every output item whole: the
// reasoning items the simulator issued are accepted back.
func TestOpenAIResponsesSDKToolLoop(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[streamed], func(t *testing.T) {
			s, url := start(t, sim.Config{})
			client := openaiClient(url)
			input := []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage(loopRequest, responses.EasyInputMessageRoleUser)}
			params := responses.ResponseNewParams{Model: sim.Planner, Store: openai.Bool(false), Instructions: openai.String("Be terse."),
				Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
				Tools:   []responses.ToolUnionParam{responses.ToolParamOfFunction("read_file", readFileSchema, false), responses.ToolParamOfFunction("search", searchSchema, false)}}
			var calls []call
			var answer string
			reasoning := 0
			for step := 0; step < 4 && answer == ""; step++ {
				params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
				res := responsesStep(t, client, params, streamed)
				for _, it := range res.Output {
					input = append(input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(it.RawJSON())))
					switch it.Type {
					case "reasoning":
						reasoning++
						if it.EncryptedContent == "" {
							t.Errorf("reasoning item %s has no encrypted_content", it.ID)
						}
					case "function_call":
						calls = append(calls, call{it.Name, it.Arguments.OfString})
						out := runTool(t, it.Name, []byte(it.Arguments.OfString))
						input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
							CallID: openai.String(it.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(out)}}})
					}
				}
				if res.Usage.InputTokens == 0 {
					t.Errorf("usage = %+v, want counts", res.Usage)
				}
				if !strings.Contains(string(res.RawJSON()), `"function_call"`) {
					answer = res.OutputText()
				}
			}
			if reasoning != 3 {
				t.Errorf("%d reasoning items, want one per step (3)", reasoning)
			}
			wantLoop(t, calls, answer)
			wantLog(t, s, "openai-responses", sim.Planner, 3)
		})
	}
}

func responsesStep(t *testing.T, client openai.Client, params responses.ResponseNewParams, streamed bool) *responses.Response {
	t.Helper()
	ctx := context.Background()
	if !streamed {
		res, err := client.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	st := client.Responses.NewStreaming(ctx, params)
	var done *responses.Response
	deltas := 0
	for st.Next() {
		ev := st.Current()
		switch ev.Type {
		case "response.output_text.delta", "response.function_call_arguments.delta":
			deltas++
		case "response.completed":
			r := ev.Response
			done = &r
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if done == nil || deltas == 0 {
		t.Fatalf("stream ended without response.completed or deltas (%d deltas)", deltas)
	}
	return done
}
