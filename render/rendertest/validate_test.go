package rendertest

import (
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/render"
)

var (
	chat      = render.Target{API: render.OpenAIChat, Model: "gpt-4.1"}
	chatO3    = render.Target{API: render.OpenAIChat, Model: "o3"}
	mistral   = render.Target{API: render.OpenAIChat, Provider: "mistral", Model: "mistral-large"}
	resp      = render.Target{API: render.OpenAIResponses, Model: "gpt-5"}
	anth      = render.Target{API: render.Anthropic, Model: "claude-sonnet-4-6"}
	gem3      = render.Target{API: render.Gemini, Model: "gemini-3-pro"}
	ollamaTgt = render.Target{API: render.Ollama, Model: "qwen3"}
)

// The minimal valid examples of the rendering reference (§1.1 to §1.5)
// pass their validator.
func TestValidateAcceptsReferenceExamples(t *testing.T) {
	cases := []struct {
		t    render.Target
		body string
	}{
		{chat, `{"model":"gpt-4.1","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],
 "messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Weather in Paris?"},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
  {"role":"tool","tool_call_id":"call_1","content":"18C cloudy"},{"role":"assistant","content":"18°C, cloudy."},{"role":"user","content":"And tomorrow?"}]}`},
		{resp, `{"model":"gpt-5","store":false,"include":["reasoning.encrypted_content"],"instructions":"Be terse.",
 "input":[{"role":"user","content":"Weather in Paris?"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA"},
  {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
  {"type":"function_call_output","call_id":"call_1","output":"18C cloudy"},{"role":"assistant","content":"18°C, cloudy."},{"role":"user","content":"And tomorrow?"}]}`},
		{anth, `{"model":"claude-sonnet-4-6","max_tokens":2048,"system":"Be terse.","thinking":{"type":"enabled","budget_tokens":1024},
 "tools":[{"name":"get_weather","input_schema":{"type":"object"}}],
 "messages":[{"role":"user","content":"Weather in Paris?"},
  {"role":"assistant","content":[{"type":"thinking","thinking":"Need weather.","signature":"EuYB"},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"18C cloudy","is_error":false}]}]}`},
		{gem3, `{"systemInstruction":{"parts":[{"text":"Be terse."}]},"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]},
  {"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"CiIB"}]},
  {"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"18C cloudy"}}}]},
  {"role":"model","parts":[{"text":"18°C, cloudy."}]},{"role":"user","parts":[{"text":"And tomorrow?"}]}]}`},
		{ollamaTgt, `{"model":"qwen3","stream":false,"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Weather in Paris?"},
  {"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},
  {"role":"tool","tool_name":"get_weather","content":"18C cloudy"},{"role":"assistant","content":"18°C, cloudy."},{"role":"user","content":"And tomorrow?"}]}`},
	}
	for _, c := range cases {
		if err := Validate(c.t, []byte(c.body)); err != nil {
			t.Errorf("%s: %v", c.t.API, err)
		}
	}
}

// Each hard rule fails with the provider's own words (reference §2).
func TestValidateRejects(t *testing.T) {
	cases := []struct {
		name string
		t    render.Target
		body string
		want string
	}{
		{"chat dangling call", chat, `{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"y"}]}`,
			"must be followed by tool messages responding to each 'tool_call_id'"},
		{"chat orphan tool", chat, `{"messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c9","content":"r"}]}`,
			"must be a response to a preceeding message with 'tool_calls'"},
		{"chat object arguments", chat, `{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":{}}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
			"expected a string, but got an object"},
		{"chat invalid JSON arguments", chat, `{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{\"a\": "}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
			"must be a JSON-encoded object"},
		{"chat array arguments", chat, `{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"[1,2]"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
			"must be a JSON-encoded object"},
		{"responses scalar arguments", resp, `{"store":false,"input":[{"type":"function_call","call_id":"c1","name":"f","arguments":"null"},{"type":"function_call_output","call_id":"c1","output":"r"}]}`,
			"must be a JSON-encoded object"},
		{"chat long id", chat, `{"messages":[{"role":"assistant","tool_calls":[{"id":"` + strings.Repeat("x", 41) + `","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"` + strings.Repeat("x", 41) + `","content":"r"}]}`,
			"^[a-zA-Z0-9_-]{1,40}$"},
		{"mistral id", mistral, `{"messages":[{"role":"assistant","tool_calls":[{"id":"call_1","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"r"}]}`,
			"must be a-z, A-Z, 0-9, with a length of 9"},
		{"o3 system role", chatO3, `{"messages":[{"role":"system","content":"x"},{"role":"user","content":"y"}]}`, "role 'developer'"},
		{"foreign reasoning_content", chat, `{"messages":[{"role":"assistant","content":"a","reasoning_content":"r"}]}`, "'reasoning_content' is unsupported"},
		{"responses dangling", resp, `{"store":false,"input":[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]}`, "No tool output found for function call c1."},
		{"responses orphan", resp, `{"store":false,"input":[{"type":"function_call_output","call_id":"c9","output":"r"}]}`, "No tool call found for function call output with call_id c9."},
		{"responses lonely reasoning", resp, `{"store":false,"include":["reasoning.encrypted_content"],"input":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"},{"role":"user","content":"x"}]}`,
			"of type 'reasoning' was provided without its required following item"},
		{"responses not persisted", resp, `{"store":false,"include":["reasoning.encrypted_content"],"input":[{"type":"reasoning","id":"rs_1","summary":[]},{"role":"assistant","content":"x"}]}`,
			"Items are not persisted when `store` is set to false"},
		{"responses id without reasoning", resp, `{"store":false,"input":[{"type":"function_call","id":"fc_1","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"r"}]}`,
			"without its required 'reasoning' item"},
		{"responses summary", resp, `{"store":false,"include":["reasoning.encrypted_content"],"input":[{"type":"reasoning","id":"rs_1","encrypted_content":"e"},{"role":"assistant","content":"x"}]}`,
			"missing required field `summary`"},
		{"responses stored", resp, `{"store":true,"input":[]}`, "store must be false"},
		{"anthropic dangling", anth, `{"max_tokens":10,"tools":[{"name":"f"}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":"y"}]}`,
			"`tool_use` ids were found without `tool_result` blocks immediately after: t1"},
		{"anthropic orphan", anth, `{"max_tokens":10,"tools":[{"name":"f"}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"r"}]}]}`,
			"unexpected `tool_use_id` found in `tool_result` blocks: t9"},
		{"anthropic results first", anth, `{"max_tokens":10,"tools":[{"name":"f"}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"text","text":"y"},{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]}`,
			"must begin with a matching number of `tool_result` blocks"},
		{"anthropic thinking final", anth, `{"max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[{"name":"f"}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]}`,
			"Expected `thinking` or `redacted_thinking`, but found `tool_use`"},
		{"anthropic thinking open turn", anth, `{"max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[{"name":"f","input_schema":{}}],"messages":[{"role":"user","content":"x"},
  {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]},
  {"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t2","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"r"}]}]}`,
			"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`"},
		{"anthropic thinking not first", anth, `{"max_tokens":10,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"t","signature":"s"}]},{"role":"user","content":"y"}]}`,
			"the first block must be thinking or redacted_thinking. Found text."},
		{"anthropic unsigned thinking", anth, `{"max_tokens":10,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"t"}]},{"role":"user","content":"y"}]}`,
			"thinking.signature: Field required"},
		{"anthropic id pattern", anth, `{"max_tokens":10,"tools":[{"name":"f"}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"fc|1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"fc|1","content":"r"}]}]}`,
			"String should match pattern '^[a-zA-Z0-9_-]+$'"},
		{"anthropic undeclared tools", anth, `{"max_tokens":10,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]}`,
			"must define tools"},
		{"anthropic alternation", anth, `{"max_tokens":10,"messages":[{"role":"user","content":"x"},{"role":"user","content":"y"}]}`, "roles must alternate"},
		{"anthropic first user", anth, `{"max_tokens":10,"messages":[{"role":"assistant","content":"x"},{"role":"user","content":"y"}]}`, `first message must use the "user" role`},
		{"anthropic empty text", anth, `{"max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "text content blocks must be non-empty"},
		{"anthropic whitespace user turn", anth, `{"max_tokens":10,"messages":[{"role":"user","content":"\n"}]}`, "text content blocks must contain non-whitespace text"},
		{"anthropic whitespace before tool_use", anth, `{"max_tokens":10,"tools":[{"name":"f","input_schema":{}}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"\n\n"},{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]}`,
			"messages.1.content.0: text content blocks must contain non-whitespace text"},
		{"anthropic whitespace tool result", anth, `{"max_tokens":10,"tools":[{"name":"f","input_schema":{}}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"\n"}]}]}`,
			"messages.2.content.0.content: text content blocks must contain non-whitespace text"},
		{"anthropic whitespace system", anth, `{"max_tokens":10,"system":[{"type":"text","text":" "}],"messages":[{"role":"user","content":"x"}]}`, "system.0: text content blocks must contain non-whitespace text"},
		{"anthropic final trailing whitespace", anth, `{"max_tokens":10,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Sure.\n"}]}`, "final assistant content cannot end with trailing whitespace"},
		{"anthropic tool name", anth, `{"max_tokens":10,"tools":[{"name":"fs.read_file","input_schema":{}}],"messages":[{"role":"user","content":"x"}]}`,
			"tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"},
		{"chat tool name", chat, `{"tools":[{"type":"function","function":{"name":"fs.read_file"}}],"messages":[{"role":"user","content":"x"}]}`,
			"Invalid 'tools[0].function.name': string does not match pattern"},
		{"chat call name", chat, `{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"` + strings.Repeat("n", 65) + `","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
			"Invalid 'messages[1].tool_calls[0].function.name': string too long"},
		{"responses tool name", resp, `{"store":false,"tools":[{"type":"function","name":"mcp/x"}],"input":[{"role":"user","content":"x"}]}`,
			"Invalid 'tools[0].name': string does not match pattern"},
		{"gemini tool name", gem3, `{"tools":[{"functionDeclarations":[{"name":"1tool"}]}],"contents":[{"role":"user","parts":[{"text":"x"}]}]}`,
			"Must start with a letter or an underscore"},
		{"anthropic mid system", anth, `{"max_tokens":10,"messages":[{"role":"user","content":"x"},{"role":"system","content":"s"},{"role":"assistant","content":"a"}]}`, `Unexpected role "system". The Messages API accepts a top-level system parameter`},
		{"anthropic mid system, flagged model", render.Target{API: render.Anthropic, Model: "claude-opus-4-8"}, `{"max_tokens":10,"messages":[{"role":"user","content":"x"},{"role":"system","content":"s"},{"role":"assistant","content":"a"}]}`, `Unexpected role "system"`},
		{"gemini parity", gem3, `{"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"AA"},{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`,
			"number of function response parts is equal to the number of function call parts"},
		{"gemini response placement", gem3, `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`,
			"function response turn comes immediately after a function call turn"},
		{"gemini leading model", gem3, `{"contents":[{"role":"model","parts":[{"text":"hi"}]},{"role":"user","parts":[{"text":"x"}]}]}`,
			"function call turn comes immediately after a user turn or after a function response turn"},
		{"gemini 3 signature", gem3, `{"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`,
			"missing a thought_signature"},
		{"gemini part without data", gem3, `{"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"text":"y"},{"thoughtSignature":"AA=="}]}]}`,
			"required oneof field 'data' must have one initialized field"},
		{"gemini base64", gem3, `{"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"text":"y","thoughtSignature":"not base64!"}]}]}`,
			"Base64 decoding failed"},
		{"ollama string arguments", ollamaTgt, `{"messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_name":"f","content":"r"}]}`,
			"can't find closing '}' symbol"},
		{"ollama dangling", ollamaTgt, `{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"f","arguments":{}}}]},{"role":"user","content":"y"}]}`,
			"tool call c1 has no tool message after it"},
	}
	for _, c := range cases {
		err := Validate(c.t, []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
