package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/openai"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
)

var producer = journal.Producer{Provider: "deepseek", API: "chat", Model: "deepseek-reasoner"}

// canned answers every request with one fixed answer.
func canned(t *testing.T, contentType, body string) string {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/v1"
}

// sse joins data lines into an SSE stream.
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		if typ, data, ok := strings.Cut(e, "|"); ok {
			b.WriteString("event: " + typ + "\n")
			e = data
		}
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

// call sends one request to a canned answer and returns the response and
// what OnText got.
func call(t *testing.T, api render.API, stream bool, base string) (*provider.Response, []string, error) {
	t.Helper()
	var deltas []string
	req := &provider.Request{API: api, Model: producer.Model, Producer: producer, Step: "st", Body: []byte(`{"model":"m"}`),
		BaseURL: base, Retry: provider.Retry{Attempts: 1}, OnText: func(d string) { deltas = append(deltas, d) }}
	resp, err := (&openai.Client{API: api, NoStream: !stream}).Call(context.Background(), req)
	return resp, deltas, err
}

func reasoning(r journal.Reasoning) provider.Output {
	r.Producer, r.Step = producer, "st"
	return provider.Output{Kind: journal.KindReasoning, Body: r}
}

func text(m journal.AssistantMessage) provider.Output {
	m.Producer, m.Step = producer, "st"
	return provider.Output{Kind: journal.KindAssistant, Body: m}
}

func toolCall(c journal.ToolCall) provider.Output {
	c.Producer, c.Step = producer, "st"
	return provider.Output{Kind: journal.KindToolCall, Body: c}
}

func usage(in, out int64) provider.Output {
	return provider.Output{Kind: journal.KindUsage, Body: journal.Usage{Producer: producer, InputTokens: in, OutputTokens: out}}
}

// A DeepSeek-style answer: reasoning_content, text, two parallel calls
// (the second with arguments that are not JSON), usage.
var chatWant = []provider.Output{
	reasoning(journal.Reasoning{Text: "think first"}),
	text(journal.AssistantMessage{Text: "Done.", StopReason: "tool_calls"}),
	toolCall(journal.ToolCall{CallID: "call_a", Name: "f", Arguments: json.RawMessage(`{"x":1}`)}),
	toolCall(journal.ToolCall{CallID: "call_b", Name: "g", RawArguments: `{"y":`}),
	usage(10, 5),
}

func TestChatParse(t *testing.T) {
	whole := `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Done.",` +
		`"reasoning_content":"think first","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},` +
		`{"id":"call_b","type":"function","function":{"name":"g","arguments":"{\"y\":"}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`
	chunk := func(delta string) string {
		return `{"choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
	}
	// Deltas of the two calls interleave; the stream closes after its
	// usage chunk without [DONE], as some compatible servers do.
	streamed := sse(
		chunk(`{"role":"assistant","reasoning_content":"think "}`), chunk(`{"reasoning_content":"first"}`),
		chunk(`{"content":"Do"}`), chunk(`{"content":"ne."}`),
		chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":""}}]}`),
		chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"x\""}}]}`),
		chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"y\":"}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}`),
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	// A server that sends no index: each call starts with its ID.
	noIndex := sse(chunk(`{"content":"Done.","reasoning_content":"think first"}`),
		chunk(`{"tool_calls":[{"id":"call_a","function":{"name":"f","arguments":"{\"x\""}}]}`),
		chunk(`{"tool_calls":[{"function":{"arguments":":1}"}}]}`),
		chunk(`{"tool_calls":[{"id":"call_b","function":{"name":"g","arguments":"{\"y\":"}}]}`),
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`, "[DONE]")
	cases := []struct {
		name, ctype, body string
		stream            bool
		deltas            []string
	}{
		{"whole", "application/json", whole, false, []string{"Done."}},
		{"stream", "text/event-stream", streamed, true, []string{"Do", "ne."}},
		{"stream without index", "text/event-stream", noIndex, true, []string{"Done."}},
		{"stream asked, answered whole", "application/json; charset=utf-8", whole, true, []string{"Done."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, deltas, err := call(t, render.OpenAIChat, tc.stream, canned(t, tc.ctype, tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(chatWant, resp.Events); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if resp.StopReason != "tool_calls" || !cmp.Equal(deltas, tc.deltas) {
				t.Errorf("stop %q, deltas %q; want tool_calls, %q", resp.StopReason, deltas, tc.deltas)
			}
		})
	}
}

// A Responses answer: reasoning given as reasoning_text content (no
// summary), a call whose arguments are not JSON, a message; incomplete
// for max_output_tokens. Streamed, the final event lists no output, so
// the items come from output_item.done.
func TestResponsesParse(t *testing.T) {
	items := []string{
		`{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"hmm"}],"encrypted_content":"enc=="}`,
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{bad","status":"completed"}`,
		`{"type":"message","id":"msg_1","role":"assistant","status":"incomplete","content":[{"type":"output_text","text":"Hel"},{"type":"output_text","text":"lo"}]}`,
	}
	resp := func(output string) string {
		return `{"id":"resp_1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[` + output +
			`],"usage":{"input_tokens":7,"output_tokens":3}}`
	}
	streamed := sse(`response.created|{"type":"response.created","response":{"status":"in_progress","output":[]}}`,
		`response.output_item.done|{"type":"response.output_item.done","output_index":0,"item":`+items[0]+`}`,
		`response.output_item.done|{"type":"response.output_item.done","output_index":1,"item":`+items[1]+`}`,
		`response.output_text.delta|{"type":"response.output_text.delta","output_index":2,"delta":"Hel"}`,
		`response.output_text.delta|{"type":"response.output_text.delta","output_index":2,"delta":"lo"}`,
		`response.output_item.done|{"type":"response.output_item.done","output_index":2,"item":`+items[2]+`}`,
		`response.incomplete|{"type":"response.incomplete","response":`+resp("")+`}`)
	want := []provider.Output{
		reasoning(journal.Reasoning{Text: "hmm", Encrypted: "enc==", ItemID: "rs_1"}),
		toolCall(journal.ToolCall{CallID: "call_1", Name: "f", RawArguments: "{bad", ItemID: "fc_1"}),
		text(journal.AssistantMessage{Text: "Hello", StopReason: "max_output_tokens", ItemID: "msg_1"}),
		usage(7, 3),
	}
	cases := []struct {
		name, ctype, body string
		stream            bool
		deltas            []string
	}{
		{"whole", "application/json", resp(strings.Join(items, ",")), false, []string{"Hello"}},
		{"stream", "text/event-stream", streamed, true, []string{"Hel", "lo"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, deltas, err := call(t, render.OpenAIResponses, tc.stream, canned(t, tc.ctype, tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got.Events); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
			if got.StopReason != "max_output_tokens" || !cmp.Equal(deltas, tc.deltas) {
				t.Errorf("stop %q, deltas %q; want max_output_tokens, %q", got.StopReason, deltas, tc.deltas)
			}
		})
	}
}

// A generation the provider reports as failed (an error event, a failed
// response, an error chunk) is an unavailable *provider.Error with the
// provider's code and message; a stream cut before its final event is a
// dropped connection.
func TestFailedGeneration(t *testing.T) {
	cases := []struct {
		name      string
		api       render.API
		ctype     string
		body      string
		typ, msg  string
		transport bool
	}{
		{"responses error event", render.OpenAIResponses, "text/event-stream",
			sse(`error|{"type":"error","code":"server_error","message":"The server had an error.","param":null}`), "server_error", "The server had an error.", false},
		{"responses failed", render.OpenAIResponses, "application/json",
			`{"status":"failed","error":{"code":"server_error","message":"Try again."},"output":[]}`, "server_error", "Try again.", false},
		{"chat error chunk", render.OpenAIChat, "text/event-stream",
			sse(`{"error":{"message":"Overloaded.","type":"server_error"}}`), "server_error", "Overloaded.", false},
		{"responses cut", render.OpenAIResponses, "text/event-stream",
			sse(`response.output_text.delta|{"type":"response.output_text.delta","delta":"Hi"}`), "", "", true},
		{"chat cut", render.OpenAIChat, "text/event-stream",
			sse(`{"choices":[{"index":0,"delta":{"content":"Hi"}}]}`), "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := call(t, tc.api, tc.ctype == "text/event-stream", canned(t, tc.ctype, tc.body))
			var pe *provider.Error
			if !errors.As(err, &pe) || !errors.Is(err, provider.ErrUnavailable) || pe.Status != 0 {
				t.Fatalf("err = %v, want an unavailable *provider.Error", err)
			}
			if pe.Type != tc.typ || pe.Message != tc.msg || pe.Err == nil {
				t.Errorf("got type %q message %q err %v; want %q %q", pe.Type, pe.Message, pe.Err, tc.typ, tc.msg)
			}
			if tc.transport && !strings.Contains(pe.Err.Error(), "before its final event") {
				t.Errorf("err %v, want a stream cut before its final event", pe.Err)
			}
		})
	}
}

// The stream switch goes at the end of the outer object and nowhere else.
func TestStreamBody(t *testing.T) {
	cases := []struct {
		api        render.API
		stream     bool
		body, want string
	}{
		{render.OpenAIResponses, true, `{"model":"m"}`, `{"model":"m","stream":true}`},
		{render.OpenAIChat, true, `{"model":"m"}`, `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`},
		{render.OpenAIResponses, true, `{}`, `{"stream":true}`},
		{render.OpenAIResponses, true, " {\"a\":{\"b\":1}}\n", " {\"a\":{\"b\":1},\"stream\":true}\n"},
		{render.OpenAIResponses, true, `{"stream":false,"model":"m"}`, `{"stream":false,"model":"m"}`},
		{render.OpenAIResponses, true, `{"text":"\"stream\""}`, `{"text":"\"stream\"","stream":true}`},
		{render.OpenAIChat, false, `{"model":"m"}`, `{"model":"m"}`},
	}
	for _, tc := range cases {
		got, err := openai.StreamBody([]byte(tc.body), tc.stream, tc.api)
		if err != nil || string(got) != tc.want {
			t.Errorf("StreamBody(%s, %v, %s) = %s, %v; want %s", tc.body, tc.stream, tc.api, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{`} {
		if _, err := openai.StreamBody([]byte(bad), true, render.OpenAIChat); err == nil {
			t.Errorf("StreamBody(%q) accepted a body that is not an object", bad)
		}
	}
}

// What the client parses from a DeepSeek-style answer goes back to the
// same model as reasoning_content beside its message on the next render
// (render.Caps.ReasoningContent), with the calls and their IDs.
func TestChatReasoningReplayed(t *testing.T) {
	base := canned(t, "application/json", `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",`+
		`"content":"","reasoning_content":"think first","tool_calls":[{"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}}]}}]}`)
	resp, _, err := call(t, render.OpenAIChat, false, base)
	if err != nil {
		t.Fatal(err)
	}
	tg := render.Target{API: render.OpenAIChat, Provider: producer.Provider, Model: producer.Model, Tools: tools}
	c := newConvo(t, tg, "Read a.go.")
	for _, o := range resp.Events {
		c.add(o.Kind, o.Body)
	}
	c.add(journal.KindToolResult, journal.ToolResult{CallID: "call_a", Name: "read_file", Content: "package a"})
	body, _, err := wire.Render(c.events, tg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"reasoning_content":"think first"`, `"id":"call_a"`, `"tool_call_id":"call_a"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("next request %s lacks %s", body, want)
		}
	}
}

// A call without an ID gets one made from the step and its position; a
// call without a name makes the answer malformed (and is not retried).
func TestCallWithoutIDOrName(t *testing.T) {
	answer := func(calls string) string {
		return `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"tool_calls":[` + calls + `]}}]}`
	}
	resp, _, err := call(t, render.OpenAIChat, false, canned(t, "application/json",
		answer(`{"id":"call_x","function":{"name":"f","arguments":"{}"}},{"function":{"name":"g","arguments":"{}"}}`)))
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.Output{
		toolCall(journal.ToolCall{CallID: "call_x", Name: "f", Arguments: json.RawMessage(`{}`)}),
		toolCall(journal.ToolCall{CallID: "call_st_2", Name: "g", Arguments: json.RawMessage(`{}`)}),
	}
	if d := cmp.Diff(want, resp.Events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	_, _, err = call(t, render.OpenAIChat, false, canned(t, "application/json", answer(`{"id":"call_x","function":{"arguments":"{}"}}`)))
	var pe *provider.Error
	if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "has no name") {
		t.Errorf("err = %v, want a malformed answer", err)
	}
}
