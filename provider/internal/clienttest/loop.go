// Package clienttest holds what the tests of the model clients
// (provider/anthropic, provider/gemini, provider/ollama) share: a tool
// loop over a real journal against the simulator (provider/sim), and
// servers in front of it that fail, drop the connection or block. Only
// tests import it.
package clienttest

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
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
)

// Tools are the tools every loop offers.
var Tools = []render.Tool{
	{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"]}`)},
	{Name: "search", Description: "Search the workspace.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"query":{"type":"string"},"mode":{"type":"string","enum":["literal","regex"]},` +
			`"limit":{"type":"integer","minimum":1,"maximum":50}},"required":["query","mode"]}`)},
}

// Ask is the user request of a loop: two calls in order, then an answer.
const Ask = "Please read_file path=src/main.go, then search query=TODO."

// AskParallel asks for both calls in one step.
const AskParallel = "Please read_file path=src/main.go and search query=TODO, in parallel."

// Loop is a tool loop of one client against the simulator.
type Loop struct {
	API    render.API
	Client provider.Client
	// Ask is the user request (Ask when empty).
	Ask string
	// Base is the client's base URL for the simulator's root URL.
	Base func(root string) string
	// Sent is the body the endpoint must receive for a rendered body: the
	// rendered bytes, with the stream switch when the API keeps it there.
	Sent func(rendered []byte) []byte
	// Stream is whether the client is expected to stream.
	Stream bool
	// Caps, when set, replaces the capability table's entry for the
	// simulator's model (e.g. to turn thinking on).
	Caps *render.Caps
}

// Result is what a loop did.
type Result struct {
	Events    []journal.Event
	Responses []*provider.Response
	Server    *sim.Server
	// Answer is the final assistant text.
	Answer string
}

// Run runs the loop until the planner answers with text: render, call,
// journal the outputs, run each call, journal its result, again. It fails
// t when a request is not the rendered bytes, is refused, or an output
// lacks its producer or step.
func (l Loop) Run(t *testing.T) Result {
	t.Helper()
	s := sim.New(sim.Config{})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	j := newJournal(t)
	target := render.Target{API: l.API, Model: sim.Planner, Tools: Tools, Caps: l.Caps}
	p := target.Producer()
	j.add(journal.KindInstruction, journal.Instruction{Role: "system", Text: "Be terse."})
	j.add(journal.KindUser, journal.UserMessage{Text: cmpOr(l.Ask, Ask)})
	j.add(journal.KindModelChange, journal.ModelChange{Provider: p.Provider, API: p.API, Model: p.Model})
	res := Result{Server: s}
	for step := 1; step <= 6; step++ {
		body, rep, err := wire.Render(j.events, target)
		if err != nil {
			t.Fatalf("step %d: render: %v", step, err)
		}
		var streamed strings.Builder
		req := &provider.Request{API: l.API, Model: sim.Planner, Producer: p, Step: fmt.Sprintf("step-%d", step),
			Body: body, BaseURL: l.Base(hs.URL), Key: "sk-test", OnText: func(d string) { streamed.WriteString(d) }}
		resp, err := l.Client.Call(context.Background(), req)
		l.checkLog(t, s, step, body)
		if err != nil {
			t.Fatalf("step %d: call: %v", step, err)
		}
		res.Responses = append(res.Responses, resp)
		CheckOutputs(t, req, resp)
		text, calls := j.record(resp, rep)
		if streamed.String() != text {
			t.Errorf("step %d: OnText got %q, journal text %q", step, streamed.String(), text)
		}
		if len(calls) == 0 {
			res.Events, res.Answer = j.events, text
			return res
		}
		for _, c := range calls {
			j.add(journal.KindToolResult, journal.ToolResult{CallID: c.CallID, Name: c.Name, Content: RunTool(t, c)})
		}
	}
	t.Fatalf("the planner did not answer within 6 steps")
	return res
}

// checkLog checks the newest request the simulator received.
func (l Loop) checkLog(t *testing.T, s *sim.Server, step int, body []byte) {
	t.Helper()
	log := s.Requests()
	if len(log) == 0 {
		t.Fatalf("step %d: the simulator received nothing", step)
	}
	got := log[len(log)-1]
	if want := l.Sent(body); !bytes.Equal(got.Body, want) {
		t.Errorf("step %d: the simulator received\n%s\nwant the rendered bytes\n%s", step, got.Body, want)
	}
	if got.Status != 200 {
		t.Fatalf("step %d: refused with %d: %v", step, got.Status, got.Violations)
	}
	if got.Stream != l.Stream {
		t.Errorf("step %d: stream = %v, want %v", step, got.Stream, l.Stream)
	}
}

// CheckOutputs checks that every output carries the request's producer
// and step and is one of the four answer kinds, with the usage last.
func CheckOutputs(t *testing.T, req *provider.Request, resp *provider.Response) {
	t.Helper()
	for i, o := range resp.Events {
		p, step := header(o)
		if p != req.Producer || (o.Kind != journal.KindUsage && step != req.Step) {
			t.Errorf("output %d (%s): producer %v step %q, want %v %q", i, o.Kind, p, step, req.Producer, req.Step)
		}
	}
	if n := len(resp.Events); n == 0 || resp.Events[n-1].Kind != journal.KindUsage {
		t.Errorf("outputs %v do not end with the usage", resp.Events)
	} else if u := resp.Events[n-1].Body.(journal.Usage); u.InputTokens <= 0 || u.OutputTokens <= 0 {
		t.Errorf("usage = %+v, want counts", u)
	}
	if resp.StopReason == "" || resp.Attempts < 1 {
		t.Errorf("stop reason %q, attempts %d", resp.StopReason, resp.Attempts)
	}
}

func header(o provider.Output) (journal.Producer, string) {
	switch b := o.Body.(type) {
	case journal.Reasoning:
		return b.Producer, b.Step
	case journal.AssistantMessage:
		return b.Producer, b.Step
	case journal.ToolCall:
		return b.Producer, b.Step
	case journal.Usage:
		return b.Producer, ""
	}
	return journal.Producer{}, "<" + fmt.Sprintf("%T", o.Body) + ">"
}

// RunTool is the fake workspace: it answers from the call's arguments,
// so an answer that cites the results proves the model read them.
func RunTool(t *testing.T, c journal.ToolCall) string {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal(c.Arguments, &a); err != nil {
		t.Fatalf("%s: arguments %s (raw %q) are not a JSON object: %v", c.Name, c.Arguments, c.RawArguments, err)
	}
	switch c.Name {
	case "read_file":
		return fmt.Sprintf("contents of %v: package main", a["path"])
	case "search":
		return fmt.Sprintf("2 matches for %v (%v)", a["query"], a["mode"])
	}
	t.Fatalf("model called unknown tool %q", c.Name)
	return ""
}

// WantAnswer checks that the final answer cites both results.
func WantAnswer(t *testing.T, answer string) {
	t.Helper()
	for _, cite := range []string{"contents of src/main.go: package main", "2 matches for TODO (literal)"} {
		if !strings.Contains(answer, cite) {
			t.Errorf("answer %q does not cite %q", answer, cite)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
