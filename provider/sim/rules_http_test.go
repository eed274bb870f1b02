package sim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/provider/sim"
)

// post sends body to path and returns the status and the decoded answer.
func post(t *testing.T, base, path, body string) (int, map[string]any) {
	t.Helper()
	res, err := http.Post(base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("answer %q is not a JSON object: %v", b, err)
	}
	return res.StatusCode, v
}

func field(v any, path ...string) any {
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// errorShape checks an error answer against its API's documented error
// object and returns its message.
func errorShape(t *testing.T, api string, status int, v map[string]any) string {
	t.Helper()
	var msg any
	switch api {
	case "openai":
		if field(v, "error", "type") != "invalid_request_error" {
			t.Errorf("OpenAI error type = %v in %v", field(v, "error", "type"), v)
		}
		msg = field(v, "error", "message")
	case "anthropic":
		want := map[int]string{400: "invalid_request_error", 404: "not_found_error"}[status]
		if v["type"] != "error" || field(v, "error", "type") != want || v["request_id"] == nil {
			t.Errorf("Anthropic error = %v, want type error, error.type %s and a request_id", v, want)
		}
		msg = field(v, "error", "message")
	case "gemini":
		want := map[int]string{400: "INVALID_ARGUMENT", 404: "NOT_FOUND"}[status]
		if field(v, "error", "status") != want || field(v, "error", "code") != float64(status) {
			t.Errorf("Gemini error = %v, want status %s and code %d", v, want, status)
		}
		msg = field(v, "error", "message")
	case "ollama":
		msg = v["error"]
	}
	s, ok := msg.(string)
	if !ok {
		t.Errorf("no error message in %v", v)
	}
	return s
}

const (
	chatPath      = "/v1/chat/completions"
	responsesPath = "/v1/responses"
	messagesPath  = "/v1/messages"
	geminiPath    = "/v1beta/models/capsule-sim/planner:generateContent"
	ollamaPath    = "/api/chat"
	tool1         = `"tools":[{"name":"read_file","input_schema":{"type":"object"}}]`
)

// Each documented rule, broken on the wire, is answered with the
// provider's own status and error body, and the request log says why.
func TestRulesRefusedWithProviderError(t *testing.T) {
	s, base := start(t, sim.Config{})
	echoThinking := s.Sign("anthropic", sim.Echo, "x", "Plan.")
	plannerThinking := s.Sign("anthropic", sim.Planner, "x", "Plan.")
	echoEncrypted := s.Sign("openai-responses", sim.Echo, "x", "rs_1")
	echoThought := s.Sign("gemini", sim.Echo, "x", "")
	anthropicLoop := func(thinking, sig string) string {
		return `{"model":"capsule-sim/planner","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":1024},` + tool1 + `,"messages":[
			{"role":"user","content":"read it"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"` + thinking + `","signature":"` + sig + `"},{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}`
	}
	cases := []struct {
		name, api, path, body string
		status                int
		want                  string
	}{
		{"chat dangling call", "openai", chatPath, `{"model":"capsule-sim/planner","messages":[{"role":"user","content":"x"},
			{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"y"}]}`,
			400, "The following tool_call_ids did not have response messages: call_1"},
		{"chat arguments not an object", "openai", chatPath, `{"model":"capsule-sim/planner","messages":[{"role":"user","content":"x"},
			{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"[1,2]"}}]},{"role":"tool","tool_call_id":"call_1","content":"r"}]}`,
			400, "must be a JSON-encoded object"},
		{"chat orphan tool message", "openai", chatPath, `{"model":"capsule-sim/planner","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c9","content":"r"}]}`,
			400, "must be a response to a preceeding message with 'tool_calls'"},
		{"chat unknown model", "openai", chatPath, `{"model":"gpt-4.1","messages":[{"role":"user","content":"x"}]}`,
			404, "The model `gpt-4.1` does not exist"},
		{"responses orphan output", "openai", responsesPath, `{"model":"capsule-sim/planner","store":false,"input":[{"role":"user","content":"x"},
			{"type":"function_call_output","call_id":"call_9","output":"r"}]}`, 400, "No tool call found for function call output with call_id call_9."},
		{"responses reasoning not persisted", "openai", responsesPath, `{"model":"capsule-sim/planner","store":false,"include":["reasoning.encrypted_content"],"input":[{"role":"user","content":"x"},
			{"type":"reasoning","id":"rs_1","summary":[]},{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"r"}]}`,
			404, "Items are not persisted when `store` is set to false"},
		{"responses foreign encrypted reasoning", "openai", responsesPath, `{"model":"capsule-sim/planner","store":false,"include":["reasoning.encrypted_content"],"input":[{"role":"user","content":"x"},
			{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"` + echoEncrypted + `"},{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"r"}]}`,
			400, "The encrypted content for item rs_1 could not be verified."},
		{"anthropic system role in messages", "anthropic", messagesPath, `{"model":"capsule-sim/planner","max_tokens":100,"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"x"}]}`,
			400, `Unexpected role "system"`},
		{"anthropic whitespace-only text", "anthropic", messagesPath, `{"model":"capsule-sim/planner","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"\n\n"}]}]}`,
			400, "text content blocks must contain non-whitespace text"},
		{"anthropic dangling tool_use", "anthropic", messagesPath, `{"model":"capsule-sim/planner","max_tokens":100,` + tool1 + `,"messages":[{"role":"user","content":"x"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}]},{"role":"user","content":"y"}]}`,
			400, "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"},
		{"anthropic foreign thinking signature", "anthropic", messagesPath, anthropicLoop("Plan.", echoThinking), 400, "messages.1.content.0: Invalid `signature` in `thinking` block"},
		{"anthropic modified thinking", "anthropic", messagesPath, anthropicLoop("Plan B.", plannerThinking), 400, "Invalid `signature` in `thinking` block"},
		{"anthropic unknown model", "anthropic", messagesPath, `{"model":"claude-sonnet-4-6","max_tokens":100,"messages":[{"role":"user","content":"x"}]}`, 404, "model: claude-sonnet-4-6"},
		{"gemini foreign thought signature", "gemini", geminiPath, `{"contents":[{"role":"user","parts":[{"text":"x"}]},
			{"role":"model","parts":[{"functionCall":{"name":"read_file","args":{}},"thoughtSignature":"` + echoThought + `"}]},
			{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"ok"}}}]}]}`, 400, "Corrupted thought signature"},
		{"gemini response parity", "gemini", geminiPath, `{"contents":[{"role":"user","parts":[{"text":"x"}]},
			{"role":"model","parts":[{"functionCall":{"name":"a","args":{}},"thoughtSignature":"skip_thought_signature_validator"},{"functionCall":{"name":"b","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"a","response":{"output":"ok"}}}]}]}`, 400, "number of function response parts is equal to the number of function call parts"},
		{"gemini unknown model", "gemini", "/v1beta/models/gemini-3-pro:generateContent", `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`, 404, "models/gemini-3-pro is not found"},
		{"ollama string arguments", "ollama", ollamaPath, `{"model":"capsule-sim/planner","messages":[{"role":"user","content":"x"},
			{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_name":"f","content":"r"}]}`,
			400, "can't find closing '}' symbol"},
		{"ollama unknown model", "ollama", ollamaPath, `{"model":"qwen3","messages":[{"role":"user","content":"x"}]}`, 404, `model "qwen3" not found`},
		{"not JSON", "openai", chatPath, `{"model":`, 400, "We could not parse the JSON body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := len(s.Requests())
			status, v := post(t, base, c.path, c.body)
			if status != c.status {
				t.Errorf("status = %d, want %d (%v)", status, c.status, v)
			}
			if msg := errorShape(t, c.api, c.status, v); !strings.Contains(msg, c.want) {
				t.Errorf("message = %q, want it to contain %q", msg, c.want)
			}
			log := s.Requests()
			if len(log) != n+1 || log[n].Status != c.status || len(log[n].Violations) == 0 {
				t.Errorf("request log = %+v, want one entry with status %d and its violations", log[n:], c.status)
			}
		})
	}
}

// The two documented Gemini dummy signatures pass where another model's
// calls are replayed, and so does the simulator's own signature.
func TestGeminiDummySignaturesAccepted(t *testing.T) {
	s, base := start(t, sim.Config{})
	for _, sig := range []string{"skip_thought_signature_validator", "context_engineering_is_the_way_to_go", s.Sign("gemini", sim.Planner, "y", "")} {
		body := `{"contents":[{"role":"user","parts":[{"text":"read_file path=a.go"}]},
			{"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"path":"a.go"}},"thoughtSignature":"` + sig + `"}]},
			{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"ok"}}}]}],
			"tools":[{"functionDeclarations":[{"name":"read_file","parametersJsonSchema":{"type":"object"}}]}]}`
		if status, v := post(t, base, geminiPath, body); status != 200 {
			t.Errorf("signature %q: status %d: %v", sig, status, v)
		}
	}
}

// The request log is served over HTTP, for tests that run the endpoint
// in another process.
func TestRequestLogOverHTTP(t *testing.T) {
	_, base := start(t, sim.Config{})
	post(t, base, chatPath, `{"model":"capsule-sim/echo","messages":[{"role":"user","content":"hello"}]}`)
	res, err := http.Get(base + "/capsule-sim/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var log []sim.Request
	if err := json.NewDecoder(res.Body).Decode(&log); err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0].Model != sim.Echo || log[0].API != "openai-chat" || !bytes.Contains(log[0].Body, []byte("hello")) {
		t.Fatalf("log = %+v, want the one echo request", log)
	}
}
