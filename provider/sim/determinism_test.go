package sim_test

import (
	"testing"

	"github.com/agentcapsule/capsule/provider/sim"
)

// An answer is a function of the request only: two servers answer the
// same request with the same bytes, on every API, streamed or not.
func TestAnswersAreDeterministic(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]`
	reqs := []struct{ path, body string }{
		{chatPath, `{"model":"capsule-sim/planner","stream":true,` + tools + `,"messages":[{"role":"user","content":"read_file path=a.go"}]}`},
		{responsesPath, `{"model":"capsule-sim/planner","store":false,"include":["reasoning.encrypted_content"],"input":"hello"}`},
		{messagesPath, `{"model":"capsule-sim/planner","max_tokens":4096,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hello"}]}`},
		{"/v1beta/models/capsule-sim/planner:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hello"}]}]}`},
		{ollamaPath, `{"model":"capsule-sim/planner","think":true,"messages":[{"role":"user","content":"hello"}]}`},
	}
	_, a := start(t, sim.Config{})
	_, b := start(t, sim.Config{})
	for _, r := range reqs {
		s1, x := postRaw(t, a, r.path, r.body)
		s2, y := postRaw(t, b, r.path, r.body)
		if s1 != 200 || s2 != 200 || x != y {
			t.Errorf("%s: answers differ or fail: %d %q / %d %q", r.path, s1, x, s2, y)
		}
	}
}
