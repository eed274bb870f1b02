package ollama_test

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
	"github.com/agentcapsule/capsule/provider/internal/clienttest"
	"github.com/agentcapsule/capsule/provider/ollama"
	"github.com/agentcapsule/capsule/render"
)

// cannedStream is an older server's answer: thinking, text in two
// pieces, two calls without IDs, then the done line.
var cannedStream = []string{
	`{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"","thinking":"I should look."},"done":false}`,
	`{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"Reading "},"done":false}`,
	`{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"both."},"done":false}`,
	`{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"","tool_calls":[` +
		`{"function":{"index":0,"name":"read_file","arguments":{"path":"a.go","lines":[1,2]}}},` +
		`{"function":{"index":1,"name":"search","arguments":{"query":"x","mode":"literal"}}}]},"done":false}`,
	`{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":40,"eval_count":9}`,
}

// A canned stream parses into the journal bodies in generation order;
// calls without an ID get the step's deterministic IDs, which the next
// render sends back as tool_call_id.
func TestParseStream(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, strings.Join(cannedStream, "\n")+"\n")
	}))
	defer hs.Close()
	p := journal.Producer{Provider: "ollama", API: "chat", Model: "m"}
	var text strings.Builder
	req := &provider.Request{API: render.Ollama, Model: "m", Producer: p, Step: "s1", Body: []byte(`{"model":"m","messages":[]}`),
		BaseURL: hs.URL, OnText: func(d string) { text.WriteString(d) }}
	resp, err := ollama.New(hs.Client()).Call(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	id0, id1 := ollama.CallID("s1", 0), ollama.CallID("s1", 1)
	want := []provider.Output{
		{Kind: journal.KindReasoning, Body: journal.Reasoning{Producer: p, Step: "s1", Text: "I should look."}},
		{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Producer: p, Step: "s1", Text: "Reading both.", StopReason: "stop"}},
		{Kind: journal.KindToolCall, Body: journal.ToolCall{Producer: p, Step: "s1", CallID: id0, Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go","lines":[1,2]}`)}},
		{Kind: journal.KindToolCall, Body: journal.ToolCall{Producer: p, Step: "s1", CallID: id1, Name: "search", Arguments: json.RawMessage(`{"query":"x","mode":"literal"}`)}},
		{Kind: journal.KindUsage, Body: journal.Usage{Producer: p, InputTokens: 40, OutputTokens: 9}},
	}
	if diff := cmp.Diff(want, resp.Events); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if text.String() != "Reading both." || resp.StopReason != "stop" {
		t.Errorf("OnText %q, stop %q", text.String(), resp.StopReason)
	}
	next := string(clienttest.Next(t, render.Target{API: render.Ollama, Model: "m", Tools: clienttest.Tools}, resp))
	for _, id := range []string{id0, id1} {
		if strings.Count(next, `"`+id+`"`) != 2 {
			t.Errorf("next request does not send call %s back with its result:\n%s", id, next)
		}
	}
	if id0 == id1 || id0 != ollama.CallID("s1", 0) || id0 == ollama.CallID("s2", 0) || len(id0) > 40 {
		t.Errorf("call IDs %q %q are not distinct, stable and short", id0, id1)
	}
}

func TestSetStream(t *testing.T) {
	for _, tc := range []struct {
		in   string
		on   bool
		want string
	}{
		{`{"model":"m","stream":false}`, true, `{"model":"m","stream":true}`},
		{`{"model":"m","stream" : false ,"x":1}`, true, `{"model":"m","stream" : true ,"x":1}`},
		{`{"model":"m","stream":true}`, false, `{"model":"m","stream":false}`},
		{`{"model":"m"}`, false, `{"model":"m","stream":false}`},
		{`{ }`, true, `{ "stream":true}`},
		{`{"messages":[{"tool_calls":[{"arguments":{"stream":false}}]}],"stream":false}`, true,
			`{"messages":[{"tool_calls":[{"arguments":{"stream":false}}]}],"stream":true}`},
		{`{"messages":[{"content":"\"stream\":false"}]}`, true, `{"messages":[{"content":"\"stream\":false"}],"stream":true}`},
	} {
		got, err := ollama.SetStream([]byte(tc.in), tc.on)
		if err != nil || string(got) != tc.want {
			t.Errorf("SetStream(%s, %v) = %s, %v; want %s", tc.in, tc.on, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `[]`, `{"a":`, `"x"`} {
		if _, err := ollama.SetStream([]byte(bad), true); err == nil {
			t.Errorf("SetStream(%q) accepted a body that is not an object", bad)
		}
	}
}
