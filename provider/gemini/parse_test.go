package gemini_test

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
	"github.com/agentcapsule/capsule/provider/gemini"
	"github.com/agentcapsule/capsule/provider/internal/clienttest"
	"github.com/agentcapsule/capsule/render"
)

// cannedStream has a signed thought, text in two pieces, a call with an
// id (arguments in the model's key order, signature in URL-safe base64),
// a call without one, and a final empty text part that carries a
// signature.
var cannedStream = []string{
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"Plan: read.","thought":true,"thoughtSignature":"c2lnLXQ="}]}}]}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"Reading "}]}}]}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"now."}]}}]}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"fc-1","name":"read_file","args":{"path":"a.go","depth":2}},"thoughtSignature":"c2ln_-8"}]}}]}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"search","args":{"query":"x"}}}]}}]}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"","thoughtSignature":"ZW5k"}]},"finishReason":"STOP"}],` +
		`"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":7,"thoughtsTokenCount":5,"totalTokenCount":62}}`,
}

func TestParseStream(t *testing.T) {
	var path string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.RequestURI()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range cannedStream {
			io.WriteString(w, "data: "+c+"\r\n\r\n")
		}
	}))
	defer hs.Close()
	p := journal.Producer{Provider: "google", API: "generateContent", Model: "gemini-3-pro"}
	var text strings.Builder
	req := &provider.Request{API: render.Gemini, Model: "gemini-3-pro", Producer: p, Step: "s1", Body: []byte(`{"contents":[]}`),
		BaseURL: hs.URL, OnText: func(d string) { text.WriteString(d) }}
	resp, err := gemini.New(hs.Client()).Call(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.Output{
		{Kind: journal.KindReasoning, Body: journal.Reasoning{Producer: p, Step: "s1", Text: "Plan: read.", Signature: "c2lnLXQ="}},
		{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Producer: p, Step: "s1", Text: "Reading now."}},
		{Kind: journal.KindToolCall, Body: journal.ToolCall{Producer: p, Step: "s1", CallID: "fc-1", Name: "read_file",
			Arguments: json.RawMessage(`{"path":"a.go","depth":2}`), Signature: "c2ln_-8"}},
		{Kind: journal.KindToolCall, Body: journal.ToolCall{Producer: p, Step: "s1", CallID: gemini.CallID("s1", 1), Name: "search",
			Arguments: json.RawMessage(`{"query":"x"}`)}},
		{Kind: journal.KindAssistant, Body: journal.AssistantMessage{Producer: p, Step: "s1", Signature: "ZW5k", StopReason: "STOP"}},
		{Kind: journal.KindUsage, Body: journal.Usage{Producer: p, InputTokens: 50, OutputTokens: 12}},
	}
	if diff := cmp.Diff(want, resp.Events); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if text.String() != "Reading now." || resp.StopReason != "STOP" {
		t.Errorf("OnText %q, stop %q", text.String(), resp.StopReason)
	}
	tools := []render.Tool{{Name: "read_file"}, {Name: "search"}}
	next := string(clienttest.Next(t, render.Target{API: render.Gemini, Model: "gemini-3-pro", Tools: tools}, resp))
	for _, id := range []string{"fc-1", gemini.CallID("s1", 1)} {
		if strings.Count(next, `"id":"`+id+`"`) != 2 {
			t.Errorf("next request does not send call %s back on the call and its response:\n%s", id, next)
		}
	}
	for _, sig := range []string{"c2lnLXQ=", "c2ln_-8", "ZW5k"} {
		if !strings.Contains(next, `"thoughtSignature":"`+sig+`"`) {
			t.Errorf("next request does not replay signature %s as sent:\n%s", sig, next)
		}
	}
	if want := "/v1beta/models/gemini-3-pro:streamGenerateContent?alt=sse"; path != want {
		t.Errorf("path %q, want %q", path, want)
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct {
		base, model string
		stream      bool
		want        string
	}{
		{"", "gemini-2.5-pro", false, "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent"},
		{"http://127.0.0.1:9/", "models/capsule-sim/planner", true, "http://127.0.0.1:9/v1beta/models/capsule-sim/planner:streamGenerateContent?alt=sse"},
	} {
		if got := gemini.URL(tc.base, tc.model, tc.stream); got != tc.want {
			t.Errorf("URL(%q, %q, %v) = %q, want %q", tc.base, tc.model, tc.stream, got, tc.want)
		}
	}
}
