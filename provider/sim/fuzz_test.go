package sim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/provider/sim"
)

// fuzzPaths are the endpoints a fuzzed body is sent to, by index.
var fuzzPaths = []string{chatPath, responsesPath, messagesPath, geminiPath, "/v1beta/models/capsule-sim/planner:streamGenerateContent?alt=sse", ollamaPath}

// FuzzServe: any body to any endpoint is answered (never a panic), and a
// refusal is a JSON error body.
func FuzzServe(f *testing.F) {
	for i, b := range []string{
		`{"model":"capsule-sim/planner","messages":[{"role":"user","content":"read_file path=a"}],"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object","required":["path"]}}}]}`,
		`{"model":"capsule-sim/planner","store":false,"input":[{"type":"reasoning","id":"rs_1"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`,
		`{"model":"capsule-sim/planner","max_tokens":10,"messages":[{"role":"assistant","content":[]}]}`,
		`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":[]}}]}]}`,
		`{"contents":[{"role":"user","parts":[]}]}`,
		`{"model":"capsule-sim/echo","messages":[{"role":"tool","content":"x"}]}`,
		`{"model":"capsule-sim/planner","messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"t","parameters":{"type":"object","required":["a","s"],"properties":{"a":{"type":"array","minItems":1e18},"s":{"type":"string","minLength":-3,"maxLength":-1}}}}}]}`,
	} {
		f.Add(uint8(i), b)
	}
	s := sim.New(sim.Config{})
	f.Fuzz(func(t *testing.T, path uint8, body string) {
		p := fuzzPaths[int(path)%len(fuzzPaths)]
		req := httptest.NewRequest(http.MethodPost, p, strings.NewReader(body))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != 200 && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s: status %d with a body that is not JSON: %q", p, rec.Code, rec.Body.String())
		}
	})
}

// FuzzParseCassette: a cassette parses or is refused with ErrCassette,
// never a panic; what parses marshals and parses again.
func FuzzParseCassette(f *testing.F) {
	f.Add(`{"v":1,"release":"0.2.0","kind":"capsule-sim-cassette","entries":[]}`)
	f.Add(`{"v":1,"release":"0.2.0","kind":"capsule-sim-cassette","entries":[{"digest":"sha256:` + strings.Repeat("0", 64) + `","api":"ollama","model":"m","status":200,"content_type":"a","body":""}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := sim.ParseCassette([]byte(s))
		if err != nil {
			return
		}
		b, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.ParseCassette(b); err != nil {
			t.Fatalf("a marshalled cassette does not parse: %v", err)
		}
	})
}
