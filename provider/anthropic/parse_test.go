package anthropic_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/anthropic"
	"github.com/agentcapsule/capsule/render"
)

// cannedStream is a stream with a redacted_thinking block, text in two
// deltas and a tool_use whose input is not valid JSON.
var cannedStream = []string{
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me "}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"look."}}`,
	`{"type":"content_block_stop","index":1}`,
	`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_9","name":"read_file","input":{}}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}}`,
	`{"type":"content_block_stop","index":2}`,
	`{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":30}}`,
	`{"type":"message_stop"}`,
}

// A canned stream parses into the journal bodies in block order.
func TestParseStream(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, data := range cannedStream {
			var ev struct{ Type string }
			json.Unmarshal([]byte(data), &ev)
			io.WriteString(w, "event: "+ev.Type+"\ndata: "+data+"\n\n")
		}
	}))
	defer hs.Close()
	p := journal.Producer{Provider: "anthropic", API: "messages", Model: "m"}
	var text strings.Builder
	req := &provider.Request{API: render.Anthropic, Model: "m", Producer: p, Step: "s1", Body: []byte(`{"model":"m"}`),
		BaseURL: hs.URL, OnText: func(d string) { text.WriteString(d) }}
	resp, err := anthropic.New(hs.Client()).Call(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.Output{
		{Kind: journal.KindReasoning, Body: journal.Reasoning{Producer: p, Step: "s1", Encrypted: "EmwKAhgBEgy3va", Redacted: true}},
		{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Producer: p, Step: "s1", Text: "Let me look.", StopReason: "max_tokens"}},
		{Kind: journal.KindToolCall, Body: journal.ToolCall{Producer: p, Step: "s1", CallID: "toolu_9", Name: "read_file", RawArguments: `{"path": "a`}},
		{Kind: journal.KindUsage, Body: journal.Usage{Producer: p, InputTokens: 12, OutputTokens: 30}},
	}
	if diff := cmp.Diff(want, resp.Events); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if resp.StopReason != "max_tokens" || text.String() != "Let me look." {
		t.Errorf("stop %q, OnText %q", resp.StopReason, text.String())
	}
}
