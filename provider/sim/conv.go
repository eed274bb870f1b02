package sim

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentcapsule/capsule/render"
)

// tool is one tool a request offers: its name and the JSON Schema of its
// arguments.
type tool struct {
	name   string
	schema json.RawMessage
}

// result is one tool result the request carries.
type result struct {
	callID, name, content string
	isError               bool
}

// sigCheck is one piece of replayed reasoning whose signature the
// simulator must have issued to the requested model.
type sigCheck struct {
	kind, content, sig string
	fail               Violation // the provider's answer when it was not
}

// conversation is what a model reads from a request, whatever its API:
// the tools offered, the newest user request and what happened since.
type conversation struct {
	tools    []tool
	request  string   // the newest user text
	called   []string // tool names called since the request, in call order
	results  []result // results since the request, in request order
	thinking bool     // the request asks for reasoning back
	sigs     []sigCheck
	stream   bool
}

// user makes text the newest request and forgets what happened before it;
// empty or whitespace-only text (a message of tool results) is no request.
func (c *conversation) user(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	c.request, c.called, c.results = text, nil, nil
}

func (c *conversation) call(name string) { c.called = append(c.called, name) }

// parse reads a request body of api into a conversation.
func parse(api render.API, v map[string]any) conversation {
	var c conversation
	switch api {
	case render.OpenAIChat:
		c.parseChat(v)
	case render.OpenAIResponses:
		c.parseResponses(v)
	case render.Anthropic:
		c.parseAnthropic(v)
	case render.Gemini:
		c.parseGemini(v)
	case render.Ollama:
		c.parseOllama(v)
	}
	return c
}

// text returns the text of a content that is a string or a list of parts
// with a "text" member.
func text(content any) string {
	if s, ok := content.(string); ok {
		return s
	}
	var parts []string
	for _, p := range list(content) {
		if t, ok := obj(p)["text"].(string); ok && obj(p)["type"] != "thinking" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

func raw(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

func (c *conversation) parseChat(v map[string]any) {
	c.stream, _ = v["stream"].(bool)
	for _, t := range list(v["tools"]) {
		fn := obj(obj(t)["function"])
		c.tools = append(c.tools, tool{str(fn["name"]), raw(fn["parameters"])})
	}
	names := map[string]string{}
	for _, x := range list(v["messages"]) {
		m := obj(x)
		switch str(m["role"]) {
		case "user":
			c.user(text(m["content"]))
		case "assistant":
			for _, tc := range list(m["tool_calls"]) {
				name := str(obj(obj(tc)["function"])["name"])
				names[str(obj(tc)["id"])] = name
				c.call(name)
			}
		case "tool":
			id := str(m["tool_call_id"])
			c.results = append(c.results, result{callID: id, name: names[id], content: text(m["content"])})
		}
	}
}

func (c *conversation) parseResponses(v map[string]any) {
	c.stream, _ = v["stream"].(bool)
	c.thinking = strings.Contains(fmt.Sprint(v["include"]), "reasoning.encrypted_content")
	for _, t := range list(v["tools"]) {
		c.tools = append(c.tools, tool{str(obj(t)["name"]), raw(obj(t)["parameters"])})
	}
	if s, ok := v["input"].(string); ok {
		c.user(s)
		return
	}
	names := map[string]string{}
	for _, x := range list(v["input"]) {
		it := obj(x)
		switch itemType(it) {
		case "message":
			if str(it["role"]) == "user" {
				c.user(text(it["content"]))
			}
		case "function_call":
			names[str(it["call_id"])] = str(it["name"])
			c.call(str(it["name"]))
		case "function_call_output":
			id := str(it["call_id"])
			c.results = append(c.results, result{callID: id, name: names[id], content: text(it["output"])})
		case "reasoning":
			id := str(it["id"])
			if enc := str(it["encrypted_content"]); enc != "" {
				c.sigs = append(c.sigs, sigCheck{kind: sigEncrypted, content: id, sig: enc, fail: Violation{
					Status: 400, Code: "invalid_encrypted_content", Message: fmt.Sprintf("The encrypted content for item %s could not be verified.", id)}})
			}
		}
	}
}

func (c *conversation) parseAnthropic(v map[string]any) {
	c.stream, _ = v["stream"].(bool)
	switch str(obj(v["thinking"])["type"]) {
	case "enabled", "adaptive":
		c.thinking = true
	}
	for _, t := range list(v["tools"]) {
		c.tools = append(c.tools, tool{str(obj(t)["name"]), raw(obj(t)["input_schema"])})
	}
	names := map[string]string{}
	for i, x := range list(v["messages"]) {
		m := obj(x)
		if s, ok := m["content"].(string); ok {
			if str(m["role"]) == "user" {
				c.user(s)
			}
			continue
		}
		var userText []string
		for k, bx := range list(m["content"]) {
			b := obj(bx)
			switch str(b["type"]) {
			case "text":
				userText = append(userText, str(b["text"]))
			case "tool_use":
				names[str(b["id"])] = str(b["name"])
				c.call(str(b["name"]))
			case "tool_result":
				id := str(b["tool_use_id"])
				isErr, _ := b["is_error"].(bool)
				c.results = append(c.results, result{callID: id, name: names[id], content: text(b["content"]), isError: isErr})
			case "thinking":
				c.sigs = append(c.sigs, sigCheck{kind: sigThinking, content: str(b["thinking"]), sig: str(b["signature"]), fail: Violation{
					Status: 400, Message: fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, k)}})
			case "redacted_thinking":
				c.sigs = append(c.sigs, sigCheck{kind: sigThinking, sig: str(b["data"]), fail: Violation{
					Status: 400, Message: fmt.Sprintf("messages.%d.content.%d: Invalid `data` in `redacted_thinking` block", i, k)}})
			}
		}
		if str(m["role"]) == "user" {
			c.user(strings.Join(userText, "\n"))
		}
	}
}

func (c *conversation) parseGemini(v map[string]any) {
	c.thinking = true // Gemini thinking models always sign their turns
	for _, t := range list(v["tools"]) {
		for _, d := range list(obj(t)["functionDeclarations"]) {
			schema := obj(d)["parametersJsonSchema"]
			if schema == nil {
				schema = obj(d)["parameters"]
			}
			c.tools = append(c.tools, tool{str(obj(d)["name"]), raw(schema)})
		}
	}
	for i, x := range list(v["contents"]) {
		var userText []string
		for k, px := range list(obj(x)["parts"]) {
			p := obj(px)
			if sig := str(p["thoughtSignature"]); sig != "" && !geminiDummies[sig] {
				c.sigs = append(c.sigs, sigCheck{kind: sigThought, sig: sig, fail: Violation{
					Status: 400, Message: fmt.Sprintf("Corrupted thought signature at contents[%d].parts[%d].", i, k)}})
			}
			switch {
			case p["functionCall"] != nil:
				c.call(str(obj(p["functionCall"])["name"]))
			case p["functionResponse"] != nil:
				fr := obj(p["functionResponse"])
				resp := obj(fr["response"])
				out, isErr := resp["output"], false
				if e, ok := resp["error"]; ok {
					out, isErr = e, true
				}
				content, ok := out.(string)
				if !ok {
					content = string(raw(resp))
				}
				c.results = append(c.results, result{callID: str(fr["id"]), name: str(fr["name"]), content: content, isError: isErr})
			case p["thought"] == true:
			default:
				if t, ok := p["text"].(string); ok {
					userText = append(userText, t)
				}
			}
		}
		if str(obj(x)["role"]) == "user" {
			c.user(strings.Join(userText, "\n"))
		}
	}
}

func (c *conversation) parseOllama(v map[string]any) {
	c.stream = true // Ollama streams unless told not to
	if s, ok := v["stream"].(bool); ok {
		c.stream = s
	}
	switch t := v["think"].(type) {
	case bool:
		c.thinking = t
	case string:
		c.thinking = t != ""
	}
	for _, t := range list(v["tools"]) {
		fn := obj(obj(t)["function"])
		c.tools = append(c.tools, tool{str(fn["name"]), raw(fn["parameters"])})
	}
	for _, x := range list(v["messages"]) {
		m := obj(x)
		switch str(m["role"]) {
		case "user":
			c.user(str(m["content"]))
		case "assistant":
			for _, tc := range list(m["tool_calls"]) {
				c.call(str(obj(obj(tc)["function"])["name"]))
			}
		case "tool":
			c.results = append(c.results, result{callID: str(m["tool_call_id"]), name: str(m["tool_name"]), content: str(m["content"])})
		}
	}
}
