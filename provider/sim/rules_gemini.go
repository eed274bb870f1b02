package sim

import (
	"encoding/base64"
	"fmt"
)

// ---- Gemini generateContent (reference §1.4) ----

func (c *checker) gemini(v map[string]any) {
	for i, t := range list(v["tools"]) {
		for k, d := range list(obj(t)["functionDeclarations"]) {
			c.checkGeminiName(fmt.Sprintf("tools[%d].function_declarations[%d].name", i, k), str(obj(d)["name"]))
		}
	}
	cs := list(v["contents"])
	if len(cs) == 0 {
		c.fail("contents is not specified")
	}
	prevRole := ""
	for i, x := range cs {
		content := obj(x)
		role := str(content["role"])
		parts := list(content["parts"])
		if len(parts) == 0 {
			c.fail("contents[%d].parts: must not be empty", i)
		}
		if role != "user" && role != "model" {
			c.fail("contents[%d].role: Please use a valid role: user, model.", i)
		}
		if role == prevRole {
			c.fail("Please ensure that multiturn requests alternate between user and model.")
		}
		prevRole = role
		calls := c.geminiParts(i, parts)
		if role == "model" && len(calls) > 0 {
			c.geminiCallTurn(cs, i, calls)
		}
		if role == "user" && countParts(parts, "functionResponse") > 0 && (i == 0 || len(geminiCalls(list(obj(cs[i-1])["parts"]))) == 0) {
			c.fail("Please ensure that function response turn comes immediately after a function call turn.")
		}
	}
	if len(cs) > 0 && str(obj(cs[0])["role"]) != "user" {
		c.fail("Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
	}
}

// geminiParts checks the parts of one content and returns its calls.
func (c *checker) geminiParts(i int, parts []any) []map[string]any {
	first := true
	for k, x := range parts {
		p := obj(x)
		if !hasData(p) {
			c.fail("* GenerateContentRequest.contents[%d].parts[%d].data: required oneof field 'data' must have one initialized field", i, k)
		}
		if sig, ok := p["thoughtSignature"]; ok && !validBase64(str(sig)) {
			c.fail("Invalid value at 'contents[%d].parts[%d].thought_signature' (TYPE_BYTES), Base64 decoding failed for %q", i, k, str(sig))
		}
		fc := obj(p["functionCall"])
		if fc == nil {
			continue
		}
		c.checkGeminiName(fmt.Sprintf("contents[%d].parts[%d].function_call.name", i, k), str(fc["name"]))
		if args, ok := fc["args"]; ok && obj(args) == nil {
			c.fail("Invalid value at 'contents[%d].parts[%d].function_call.args' (type.googleapis.com/google.protobuf.Struct)", i, k)
		}
		if first && c.caps.ThoughtSignatures && str(p["thoughtSignature"]) == "" {
			c.fail("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d.", str(fc["name"]), i+1)
		}
		first = false
	}
	return geminiCalls(parts)
}

// hasData reports whether a part has a member of its data oneof; an
// empty text ("text": "") counts, an absent one does not.
func hasData(p map[string]any) bool {
	for _, k := range []string{"text", "functionCall", "functionResponse", "inlineData", "fileData", "executableCode", "codeExecutionResult"} {
		if _, ok := p[k]; ok {
			return true
		}
	}
	return false
}

func geminiCalls(parts []any) []map[string]any {
	var out []map[string]any
	for _, x := range parts {
		if fc := obj(obj(x)["functionCall"]); fc != nil {
			out = append(out, fc)
		}
	}
	return out
}

func countParts(parts []any, key string) int {
	n := 0
	for _, x := range parts {
		if _, ok := obj(x)[key]; ok {
			n++
		}
	}
	return n
}

// geminiCallTurn checks that the function call turn at i is answered by
// the next content, one functionResponse per call, in call order.
func (c *checker) geminiCallTurn(cs []any, i int, calls []map[string]any) {
	if i == 0 || str(obj(cs[i-1])["role"]) != "user" {
		c.fail("Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
	}
	if i+1 >= len(cs) || str(obj(cs[i+1])["role"]) != "user" {
		c.fail("Please ensure that function response turn comes immediately after a function call turn.")
		return
	}
	var resp []map[string]any
	for _, x := range list(obj(cs[i+1])["parts"]) {
		if fr := obj(obj(x)["functionResponse"]); fr != nil {
			resp = append(resp, fr)
		}
	}
	if len(resp) != len(calls) {
		c.fail("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
		return
	}
	for k := range calls {
		if str(resp[k]["name"]) != str(calls[k]["name"]) {
			c.fail("contents[%d].parts[%d]: functionResponse name %q does not answer functionCall %q", i+1, k, str(resp[k]["name"]), str(calls[k]["name"]))
		}
		if id := str(calls[k]["id"]); id != "" && str(resp[k]["id"]) != id {
			c.fail("contents[%d].parts[%d]: functionResponse id %q does not answer functionCall id %q", i+1, k, str(resp[k]["id"]), id)
		}
	}
}

// validBase64 accepts what protobuf's JSON parser accepts for bytes:
// standard or URL-safe base64, padded or not.
func validBase64(s string) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if _, err := enc.DecodeString(s); err == nil {
			return true
		}
	}
	return false
}
