package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/openai"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
)

// The tool schemas of provider/sim's tests.
var tools = []render.Tool{
	{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"]}`)},
	{Name: "search", Description: "Search the workspace.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"query":{"type":"string"},"mode":{"type":"string","enum":["literal","regex"]},` +
			`"limit":{"type":"integer","minimum":1,"maximum":50}},"required":["query","mode"]}`)},
}

// loopRequest asks the planner for two calls in order; parallelRequest
// for both in one step.
const (
	loopRequest     = "Please read_file path=src/main.go, then search query=TODO."
	parallelRequest = "In parallel, please read_file path=src/main.go and search query=TODO."
)

// target is a planner target for api; Responses gets a reasoning model's
// capabilities, so the renderer asks for encrypted reasoning and replays it.
func target(api render.API) render.Target {
	t := render.Target{API: api, Model: sim.Planner, Tools: tools}
	if api == render.OpenAIResponses {
		t.Caps = &render.Caps{ContextWindow: 128000, MaxOutput: 16384, Thinking: render.ThinkingAlways}
	}
	return t
}

// convo is a journal built the way the agent builds it: sealed events of
// one machine.
type convo struct {
	t      *testing.T
	w      *journal.Writer
	events []journal.Event
	bodies [][]byte // the rendered body of each step
}

func newConvo(t *testing.T, tg render.Target, request string) *convo {
	c := &convo{t: t, w: journal.NewWriter("m1")}
	p := tg.Producer()
	c.add(journal.KindInstruction, journal.Instruction{Role: "system", Text: "Be terse."})
	c.add(journal.KindUser, journal.UserMessage{Text: request})
	c.add(journal.KindModelChange, journal.ModelChange{Provider: p.Provider, API: p.API, Model: p.Model})
	return c
}

func (c *convo) add(kind journal.Kind, body any) {
	c.t.Helper()
	e, err := c.w.Next(kind, 1, "", body)
	if err != nil {
		c.t.Fatalf("journal %s: %v", kind, err)
	}
	c.events = append(c.events, e)
}

// runTool is the fake workspace of provider/sim's tests.
func runTool(t *testing.T, name string, args []byte) string {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal(args, &a); err != nil {
		t.Fatalf("%s: arguments %s are not a JSON object: %v", name, args, err)
	}
	switch name {
	case "read_file":
		return fmt.Sprintf("contents of %v: package main", a["path"])
	case "search":
		return fmt.Sprintf("2 matches for %v (%v)", a["query"], a["mode"])
	}
	t.Fatalf("model called unknown tool %q", name)
	return ""
}

// step renders the journal, calls the model and journals the answer;
// it returns the calls the model made and the streamed text.
func (c *convo) step(client *openai.Client, tg render.Target, base, stepID string) (*provider.Response, []journal.ToolCall, string) {
	c.t.Helper()
	body, rep, err := wire.Render(c.events, tg)
	if err != nil {
		c.t.Fatalf("render: %v", err)
	}
	c.bodies = append(c.bodies, body)
	var text strings.Builder
	req := &provider.Request{API: tg.API, Model: tg.Model, Producer: tg.Producer(), Step: stepID, Body: body,
		BaseURL: base, OnText: func(d string) { text.WriteString(d) }}
	resp, err := client.Call(context.Background(), req)
	if err != nil {
		c.t.Fatalf("%s: call: %v", stepID, err)
	}
	var calls []journal.ToolCall
	for _, o := range resp.Events {
		wantAttributed(c.t, o, req)
		c.add(o.Kind, o.Body)
		if tc, ok := o.Body.(journal.ToolCall); ok {
			tc.Name, tc.CallID = rep.JournalToolName(tc.Name), rep.JournalCallID(tc.CallID)
			calls = append(calls, tc)
		}
	}
	return resp, calls, text.String()
}

// wantAttributed checks that an output carries the request's producer and step.
func wantAttributed(t *testing.T, o provider.Output, req *provider.Request) {
	t.Helper()
	var p journal.Producer
	step := req.Step
	switch b := o.Body.(type) {
	case journal.Reasoning:
		p, step = b.Producer, b.Step
	case journal.AssistantMessage:
		p, step = b.Producer, b.Step
	case journal.ToolCall:
		p, step = b.Producer, b.Step
	case journal.Usage:
		p = b.Producer
	default:
		t.Fatalf("output %s has body %T", o.Kind, o.Body)
	}
	if p != req.Producer || step != req.Step {
		t.Errorf("%s: producer %v step %q, want %v %q", o.Kind, p, step, req.Producer, req.Step)
	}
}

// loop is what one run of the planner's tool loop saw.
type loop struct {
	s      *sim.Server
	c      *convo
	calls  []journal.ToolCall // in journal form
	answer string             // the streamed text of the last step
	resps  []*provider.Response
}

// runLoop runs the planner's tool loop to its answer.
func runLoop(t *testing.T, api render.API, stream bool, request string) loop {
	s := sim.New(sim.Config{})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	tg := target(api)
	c := newConvo(t, tg, request)
	client := &openai.Client{API: api, NoStream: !stream}
	var all []journal.ToolCall
	var resps []*provider.Response
	for i := 1; i <= 5; i++ {
		resp, calls, text := c.step(client, tg, hs.URL+"/v1", fmt.Sprintf("step-%d", i))
		resps = append(resps, resp)
		if len(calls) == 0 {
			return loop{s, c, all, text, resps}
		}
		all = append(all, calls...)
		for _, tc := range calls {
			c.add(journal.KindToolResult, journal.ToolResult{CallID: tc.CallID, Name: tc.Name,
				Content: runTool(t, tc.Name, tc.Arguments)})
		}
	}
	t.Fatalf("no answer after 5 steps")
	return loop{}
}

// The planner's loop of two calls runs to its answer through render,
// the client and the journal, streamed and whole, on both APIs: every
// request passes the simulator's rules, including its check of the
// reasoning it issued (Responses), which fails unless the client kept
// the item IDs and encrypted content.
func TestToolLoop(t *testing.T) {
	for _, api := range []render.API{render.OpenAIChat, render.OpenAIResponses} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", api, stream), func(t *testing.T) {
				l := runLoop(t, api, stream, loopRequest)
				wantCalls(t, l.calls, [][]string{{"read_file", `{"path":"src/main.go"}`}, {"search", `{"mode":"literal","query":"TODO"}`}})
				wantAnswer(t, l.answer)
				wantServed(t, l.s, api, 3, stream)
				wantBodies(t, l, api, stream)
				if len(l.resps) != 3 {
					t.Fatalf("%d steps, want 3", len(l.resps))
				}
				wantStop(t, api, l.resps)
				if api == render.OpenAIResponses {
					wantReplayed(t, l.s, l.resps)
				}
			})
		}
	}
}

// With "parallel" the planner makes both calls in one step: two ToolCall
// outputs of one response.
func TestParallelCalls(t *testing.T) {
	for _, api := range []render.API{render.OpenAIChat, render.OpenAIResponses} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", api, stream), func(t *testing.T) {
				l := runLoop(t, api, stream, parallelRequest)
				wantCalls(t, l.calls, [][]string{{"read_file", `{"path":"src/main.go"}`}, {"search", `{"mode":"literal","query":"TODO"}`}})
				wantAnswer(t, l.answer)
				wantServed(t, l.s, api, 2, stream)
				wantBodies(t, l, api, stream)
				if n := countKind(l.resps[0], journal.KindToolCall); n != 2 {
					t.Errorf("first step made %d calls, want 2", n)
				}
			})
		}
	}
}

func countKind(r *provider.Response, k journal.Kind) int {
	n := 0
	for _, o := range r.Events {
		if o.Kind == k {
			n++
		}
	}
	return n
}

func wantCalls(t *testing.T, calls []journal.ToolCall, want [][]string) {
	t.Helper()
	if len(calls) != len(want) {
		t.Fatalf("calls = %+v, want %v", calls, want)
	}
	for i, w := range want {
		if calls[i].Name != w[0] || !sameJSON(string(calls[i].Arguments), w[1]) || calls[i].CallID == "" {
			t.Errorf("call %d = %s %s (id %q), want %s %s", i, calls[i].Name, calls[i].Arguments, calls[i].CallID, w[0], w[1])
		}
	}
}

func wantAnswer(t *testing.T, answer string) {
	t.Helper()
	for _, cite := range []string{"contents of src/main.go: package main", "2 matches for TODO (literal)"} {
		if !strings.Contains(answer, cite) {
			t.Errorf("answer %q does not cite %q", answer, cite)
		}
	}
}

// wantServed checks that the simulator answered n requests, all 200 with
// no violation, streamed as asked.
func wantServed(t *testing.T, s *sim.Server, api render.API, n int, stream bool) {
	t.Helper()
	got := s.Requests()
	if len(got) != n {
		t.Errorf("simulator got %d requests, want %d", len(got), n)
	}
	for _, r := range got {
		if r.API != api || r.Status != 200 || len(r.Violations) > 0 || r.Stream != stream {
			t.Errorf("request %d: api %s status %d stream %v violations %v; want %s 200 stream %v", r.Seq, r.API, r.Status, r.Stream, r.Violations, api, stream)
		}
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	p, _ := json.Marshal(x)
	q, _ := json.Marshal(y)
	return string(p) == string(q)
}

// wantStop checks each step's stop reason as the API spells it.
func wantStop(t *testing.T, api render.API, resps []*provider.Response) {
	t.Helper()
	want := []string{"tool_calls", "tool_calls", "stop"}
	if api == render.OpenAIResponses {
		want = []string{"completed", "completed", "completed"}
	}
	for i, r := range resps {
		if r.StopReason != want[i] || r.Attempts != 1 {
			t.Errorf("step %d: stop %q after %d attempts, want %q after 1", i+1, r.StopReason, r.Attempts, want[i])
		}
	}
	last := resps[len(resps)-1].Events
	if m, ok := last[len(last)-2].Body.(journal.AssistantMessage); !ok || m.StopReason != want[2] {
		t.Errorf("answer events %+v: want the message with stop reason %q, then usage", last, want[2])
	}
	if u, ok := last[len(last)-1].Body.(journal.Usage); !ok || u.InputTokens == 0 || u.OutputTokens == 0 {
		t.Errorf("last event %+v, want usage with counts", last[len(last)-1])
	}
}

// wantReplayed checks that each Responses step kept the reasoning item
// (rs_ ID, encrypted content, summary), the fc_ and msg_ item IDs, and
// that the next request carried the reasoning and call items back.
func wantReplayed(t *testing.T, s *sim.Server, resps []*provider.Response) {
	t.Helper()
	reqs := s.Requests()
	for i, r := range resps {
		var kinds []journal.Kind
		for _, o := range r.Events {
			kinds = append(kinds, o.Kind)
			var ids []string
			switch b := o.Body.(type) {
			case journal.Reasoning:
				if !strings.HasPrefix(b.ItemID, "rs_") || b.Encrypted == "" || len(b.Summary) == 0 || b.Text != strings.Join(b.Summary, "\n\n") {
					t.Errorf("step %d: reasoning %+v, want rs_ ID, encrypted content, summary and its text", i+1, b)
				}
				ids = []string{b.ItemID, b.Encrypted}
			case journal.ToolCall:
				if !strings.HasPrefix(b.ItemID, "fc_") {
					t.Errorf("step %d: call item ID %q, want fc_", i+1, b.ItemID)
				}
				ids = []string{b.ItemID}
			case journal.AssistantMessage:
				if !strings.HasPrefix(b.ItemID, "msg_") {
					t.Errorf("step %d: message item ID %q, want msg_", i+1, b.ItemID)
				}
			}
			for _, id := range ids {
				if i+1 < len(reqs) && !strings.Contains(string(reqs[i+1].Body), id) {
					t.Errorf("request %d does not replay %q of step %d", i+2, id, i+1)
				}
			}
		}
		if kinds[0] != journal.KindReasoning {
			t.Errorf("step %d events %v, want reasoning first", i+1, kinds)
		}
	}
}

// wantBodies checks that the simulator received each rendered body
// exactly: byte for byte unstreamed, and streamed with only the stream
// switch added as the last members of the outer object.
func wantBodies(t *testing.T, l loop, api render.API, stream bool) {
	t.Helper()
	reqs := l.s.Requests()
	if len(reqs) != len(l.c.bodies) {
		t.Fatalf("%d requests for %d renders", len(reqs), len(l.c.bodies))
	}
	for i, body := range l.c.bodies {
		want := body
		if stream {
			sw := `,"stream":true`
			if api == render.OpenAIChat {
				sw += `,"stream_options":{"include_usage":true}`
			}
			want = append(append(append([]byte(nil), body[:len(body)-1]...), sw...), '}')
		}
		if got := []byte(reqs[i].Body); !bytes.Equal(got, want) {
			t.Errorf("request %d body:\n%s\nwant (rendered + stream switch):\n%s", i+1, got, want)
		}
	}
}
