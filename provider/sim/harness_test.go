package sim_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/provider/sim"
)

// The tools every SDK test offers, as JSON Schemas.
var (
	readFileSchema = map[string]any{"type": "object", "properties": map[string]any{
		"path": map[string]any{"type": "string", "minLength": 1}}, "required": []any{"path"}}
	searchSchema = map[string]any{"type": "object", "properties": map[string]any{
		"query": map[string]any{"type": "string"},
		"mode":  map[string]any{"type": "string", "enum": []any{"literal", "regex"}},
		"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 50}}, "required": []any{"query", "mode"}}
)

// loopRequest asks for a tool loop of two calls, in order.
const loopRequest = "Please read_file path=src/main.go, then search query=TODO."

// start serves a fresh simulator for one test.
func start(t *testing.T, cfg sim.Config) (*sim.Server, string) {
	t.Helper()
	s := sim.New(cfg)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// runTool is the tests' fake workspace: it answers a call from its
// arguments, so an answer that cites the results proves the model read
// them.
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

// call is one tool call a test saw.
type call struct{ Name, Args string }

// wantLoop checks the calls and the final answer of a two-call loop.
func wantLoop(t *testing.T, calls []call, answer string) {
	t.Helper()
	want := []call{{"read_file", `{"path":"src/main.go"}`}, {"search", `{"mode":"literal","query":"TODO"}`}}
	if len(calls) != len(want) {
		t.Fatalf("calls = %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i].Name != want[i].Name || !sameJSON(calls[i].Args, want[i].Args) {
			t.Errorf("call %d = %v, want %v", i, calls[i], want[i])
		}
	}
	for _, cite := range []string{"contents of src/main.go: package main", "2 matches for TODO (literal)"} {
		if !strings.Contains(answer, cite) {
			t.Errorf("answer %q does not cite %q", answer, cite)
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

// wantLog checks that the endpoint received n requests for api and
// model, all answered 200.
func wantLog(t *testing.T, s *sim.Server, api, model string, n int) {
	t.Helper()
	got := 0
	for _, r := range s.Requests() {
		if string(r.API) != api || r.Model != model {
			t.Errorf("request %d went to %s %s, want %s %s", r.Seq, r.API, r.Model, api, model)
			continue
		}
		if r.Status != 200 {
			t.Errorf("request %d: status %d: %v", r.Seq, r.Status, r.Violations)
		}
		got++
	}
	if got != n {
		t.Errorf("endpoint logged %d requests for %s %s, want %d", got, api, model, n)
	}
}

// asError is errors.As, kept short for the SDK error types.
func asError[T error](err error, target *T) bool { return errors.As(err, target) }
