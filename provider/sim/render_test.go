package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
)

func renderTools() []render.Tool {
	rf, _ := json.Marshal(readFileSchema)
	se, _ := json.Marshal(searchSchema)
	return []render.Tool{{Name: "read_file", Parameters: rf}, {Name: "search", Parameters: se}}
}

// target is the planner on api.
func target(api render.API) render.Target {
	return render.Target{API: api, Model: sim.Planner, Tools: renderTools()}
}

// pathFor is where a rendered body for t is sent.
func pathFor(t render.Target) string {
	switch t.API {
	case render.OpenAIChat:
		return chatPath
	case render.OpenAIResponses:
		return responsesPath
	case render.Anthropic:
		return messagesPath
	case render.Gemini:
		return "/v1beta/models/" + t.Model + ":generateContent"
	}
	return ollamaPath
}

// firstStep appends the planner's first step on api to j as the
// endpoint would have answered it: reasoning signed by the simulator in
// the API's style, the read_file call and its result.
func firstStep(s *sim.Server, j *rendertest.Journal, api render.API) {
	p := target(api).Producer()
	r := journal.Reasoning{Producer: p, Step: "s1", Text: "Next: call read_file."}
	c := journal.ToolCall{CallID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"src/main.go"}`), Producer: p, Step: "s1"}
	switch api {
	case render.Anthropic:
		r.Signature = s.Sign(api, sim.Planner, "t", r.Text)
	case render.OpenAIResponses:
		r.ItemID, r.Encrypted, c.ItemID = "rs_1", s.Sign(api, sim.Planner, "t", "rs_1"), "fc_1"
	case render.Gemini:
		c.Signature = s.Sign(api, sim.Planner, "t", "")
	}
	j.Reason(r).CallWith(c).Result("call_1", "read_file", "contents of src/main.go: package main")
}

// postRendered renders events for t, checks the body against the rules
// offline, posts it and returns the status and answer.
func postRendered(t *testing.T, base string, events []journal.Event, tg render.Target) (int, string) {
	t.Helper()
	body, _, err := wire.Render(events, tg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(base+pathFor(tg), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// Bodies our renderer produces are accepted on every API, for the
// planner's own history (its signed reasoning replayed) and after a
// switch from any other API (foreign reasoning dropped, foreign Gemini
// calls given the dummy signature); the planner then makes the next call
// of the loop.
func TestRenderedBodiesAccepted(t *testing.T) {
	s, base := start(t, sim.Config{})
	for _, from := range render.APIs {
		for _, to := range render.APIs {
			t.Run(fmt.Sprintf("%s to %s", from, to), func(t *testing.T) {
				j := (&rendertest.Journal{}).System("Be terse.").User(loopRequest)
				firstStep(s, j, from)
				status, answer := postRendered(t, base, j.Events(), target(to))
				if status != 200 {
					t.Fatalf("status %d: %s", status, answer)
				}
				if !strings.Contains(answer, "search") || !strings.Contains(answer, "TODO") {
					t.Errorf("answer does not make the second call (search TODO): %s", answer)
				}
			})
		}
	}
}

// Switching A to B and back: the first model's own signed reasoning is
// replayed to it and accepted, B's is not sent to it.
func TestRenderedSwitchAndBack(t *testing.T) {
	s, base := start(t, sim.Config{})
	for _, a := range []render.API{render.Anthropic, render.OpenAIResponses, render.Gemini} {
		b := render.OpenAIChat
		if a == render.OpenAIChat {
			b = render.Anthropic
		}
		j := (&rendertest.Journal{}).System("Be terse.").User(loopRequest)
		firstStep(s, j, a)
		pb := target(b).Producer()
		j.Call(pb, "s2", "call_2", "search", `{"query":"TODO","mode":"literal"}`).Result("call_2", "search", "2 matches for TODO (literal)")
		status, answer := postRendered(t, base, j.Events(), target(a))
		if status != 200 || !strings.Contains(answer, "2 matches for TODO (literal)") {
			t.Errorf("%s after %s: status %d: %s", a, b, status, answer)
		}
	}
}

// A journal whose planner reasoning carries a signature the simulator
// issued to another model renders (the journal claims the planner made
// it) and is refused on the wire, as the provider refuses it.
func TestRenderedForeignSignatureRefused(t *testing.T) {
	s, base := start(t, sim.Config{})
	cases := []struct {
		api  render.API
		want string
	}{
		{render.Anthropic, "Invalid `signature` in `thinking` block"},
		{render.OpenAIResponses, "could not be verified"},
		{render.Gemini, "Corrupted thought signature"},
	}
	for _, c := range cases {
		p := target(c.api).Producer()
		j := (&rendertest.Journal{}).User(loopRequest)
		r := journal.Reasoning{Producer: p, Step: "s1", Text: "Plan."}
		call := journal.ToolCall{CallID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`), Producer: p, Step: "s1"}
		switch c.api {
		case render.Anthropic:
			r.Signature = s.Sign(c.api, sim.Echo, "t", r.Text)
		case render.OpenAIResponses:
			r.ItemID, r.Encrypted, call.ItemID = "rs_1", s.Sign(c.api, sim.Echo, "t", "rs_1"), "fc_1"
		case render.Gemini:
			call.Signature = s.Sign(c.api, sim.Echo, "t", "")
		}
		j.Reason(r).CallWith(call).Result("call_1", "read_file", "ok")
		status, answer := postRendered(t, base, j.Events(), target(c.api))
		if status != 400 || !strings.Contains(answer, c.want) {
			t.Errorf("%s: status %d, answer %s; want 400 with %q", c.api, status, answer, c.want)
		}
	}
}
