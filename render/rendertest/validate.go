package rendertest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/agentcapsule/capsule/render"
)

// Validate checks a rendered request body against the hard rules of the
// target's API (reference §1) and returns every violation, each worded as
// the provider words its 400 (reference §2), joined; nil if the body
// passes. It reads the JSON generically, so it checks the bytes that would
// go on the wire, not the renderer's structures.
func Validate(t render.Target, body []byte) error {
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("request body is not a JSON object: %w", err)
	}
	c := &checker{caps: t.Capabilities()}
	switch t.API {
	case render.OpenAIChat:
		c.chat(v)
	case render.OpenAIResponses:
		c.responses(v)
	case render.Anthropic:
		c.anthropic(v)
	case render.Gemini:
		c.gemini(v)
	case render.Ollama:
		c.ollama(v)
	default:
		c.fail("unknown API %q", t.API)
	}
	return errors.Join(c.errs...)
}

type checker struct {
	caps render.Caps
	errs []error
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// Generic accessors over decoded JSON.

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int64 {
	n, _ := v.(json.Number)
	i, _ := n.Int64()
	return i
}

// Tool-name patterns: Anthropic's (reference, additions), OpenAI's
// ("a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum
// length of 64", openai-go FunctionDefinitionParam) and Gemini's ("start
// with a letter or an underscore ... underscores, dots, colons and
// dashes, with a maximum length of 128", genai FunctionDeclaration).
var (
	anthropicName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	openaiName    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	geminiName    = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`)
)

// checkOpenAIName applies OpenAI's function-name rule.
func (c *checker) checkOpenAIName(where, name string) {
	switch {
	case len(name) > 64:
		c.fail("Invalid '%s': string too long. Expected a string with maximum length 64, but got a string with length %d instead.", where, len(name))
	case !openaiName.MatchString(name):
		c.fail("Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", where)
	}
}

// checkGeminiName applies Gemini's function-name rule.
func (c *checker) checkGeminiName(where, name string) {
	if !geminiName.MatchString(name) {
		c.fail("Invalid function name %q at '%s'. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, colons and dashes, with a maximum length of 128.", name, where)
	}
}

var (
	anthropicID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	openaiID    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,40}$`)
	mistralID   = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
)

// checkID applies the target's ID rule to a call ID.
func (c *checker) checkID(where, id string) {
	switch c.caps.IDRule {
	case render.IDMistral:
		if !mistralID.MatchString(id) {
			c.fail("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", id)
		}
	case render.IDOpenAI:
		if !openaiID.MatchString(id) {
			c.fail("Invalid '%s': string too long or invalid. Expected a string matching '^[a-zA-Z0-9_-]{1,40}$', but got %q instead.", where, id)
		}
	case render.IDAnthropic:
		if !anthropicID.MatchString(id) {
			c.fail("%s: String should match pattern '^[a-zA-Z0-9_-]+$'", where)
		}
	default:
		if id == "" {
			c.fail("%s: tool call id must be non-empty", where)
		}
	}
}

// isJSONObjectText reports whether s is the text of a JSON object (not
// null, an array or a scalar).
func isJSONObjectText(s string) bool {
	var m map[string]any
	return strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") && json.Unmarshal([]byte(s), &m) == nil
}

// checkArguments applies the rule of OpenAI Chat and Responses (and of
// strict OpenAI-compatible servers that validate history) to a call's
// arguments: a string holding a JSON-encoded object.
func (c *checker) checkArguments(where string, args any) {
	s, ok := args.(string)
	if !ok {
		c.fail("Invalid type for '%s': expected a string, but got an object instead.", where)
		return
	}
	if !isJSONObjectText(s) {
		c.fail("Invalid '%s': the function arguments must be a JSON-encoded object, got %q.", where, s)
	}
}

// ---- OpenAI Chat Completions (reference §1.1) ----

func (c *checker) chat(v map[string]any) {
	for i, t := range list(v["tools"]) {
		c.checkOpenAIName(fmt.Sprintf("tools[%d].function.name", i), str(obj(obj(t)["function"])["name"]))
	}
	msgs := list(v["messages"])
	if len(msgs) == 0 {
		c.fail("[] is too short - 'messages'")
	}
	ids := map[string]bool{}
	for i := 0; i < len(msgs); i++ {
		m := obj(msgs[i])
		role := str(m["role"])
		switch role {
		case "system", "developer", "user":
			if c.caps.Developer && role == "system" {
				c.fail("messages[%d].role: this model takes instructions with role 'developer' (reference §1.1)", i)
			}
		case "assistant":
			i = c.chatAssistant(msgs, i, ids)
		case "tool":
			c.fail("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
		default:
			c.fail("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function' and 'developer'.", role)
		}
	}
}

// chatAssistant checks an assistant message and the tool messages that
// must follow it; it returns the index of the last message it consumed.
func (c *checker) chatAssistant(msgs []any, i int, ids map[string]bool) int {
	m := obj(msgs[i])
	calls := list(m["tool_calls"])
	if m["content"] == nil && len(calls) == 0 {
		c.fail("Invalid value for 'content': expected a string, got null.")
	}
	if _, ok := m["reasoning_content"]; ok && !c.caps.ReasoningContent {
		c.fail("messages[%d]: property 'reasoning_content' is unsupported", i)
	}
	want := map[string]bool{}
	var order []string
	for k, tc := range calls {
		call := obj(tc)
		id := str(call["id"])
		c.checkID(fmt.Sprintf("messages[%d].tool_calls[%d].id", i, k), id)
		if ids[id] {
			c.fail("messages[%d].tool_calls[%d].id: duplicate tool call id %s", i, k, id)
		}
		ids[id] = true
		want[id] = true
		order = append(order, id)
		c.checkArguments(fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, k), obj(call["function"])["arguments"])
		c.checkOpenAIName(fmt.Sprintf("messages[%d].tool_calls[%d].function.name", i, k), str(obj(call["function"])["name"]))
	}
	j := i + 1
	for ; j < len(msgs) && str(obj(msgs[j])["role"]) == "tool"; j++ {
		id := str(obj(msgs[j])["tool_call_id"])
		if !want[id] {
			c.fail("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
		}
		delete(want, id)
	}
	var missing []string
	for _, id := range order {
		if want[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		c.fail("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s (param messages.[%d].role)", strings.Join(missing, ", "), i)
	}
	return j - 1
}

// ---- OpenAI Responses, stateless (reference §1.2) ----

func (c *checker) responses(v map[string]any) {
	if s, ok := v["store"].(bool); !ok || s {
		c.fail("store must be false: the journal, not the server, holds the state")
	}
	if _, ok := v["previous_response_id"]; ok {
		c.fail("previous_response_id is server-side state; never send it")
	}
	for i, t := range list(v["tools"]) {
		c.checkOpenAIName(fmt.Sprintf("tools[%d].name", i), str(obj(t)["name"]))
	}
	include := fmt.Sprint(v["include"])
	items := list(v["input"])
	calls := map[string]int{}
	outputs := map[string]bool{}
	for i, x := range items {
		it := obj(x)
		switch typ := itemType(it); typ {
		case "reasoning":
			c.responsesReasoning(items, i, include)
		case "function_call":
			id := str(it["call_id"])
			c.checkID(fmt.Sprintf("input[%d].call_id", i), id)
			calls[id]++
			c.checkArguments(fmt.Sprintf("input[%d].arguments", i), it["arguments"])
			c.checkOpenAIName(fmt.Sprintf("input[%d].name", i), str(it["name"]))
			c.responsesItemID(items, i, "function_call")
		case "function_call_output":
			id := str(it["call_id"])
			if calls[id] == 0 {
				c.fail("No tool call found for function call output with call_id %s.", id)
			}
			if outputs[id] {
				c.fail("Duplicate function call output with call_id %s.", id)
			}
			outputs[id] = true
		case "message":
			if str(it["role"]) == "assistant" {
				c.responsesItemID(items, i, "message")
			}
		}
	}
	for id := range calls {
		if calls[id] > 1 {
			c.fail("Duplicate function call with call_id %s.", id)
		}
		if !outputs[id] {
			c.fail("No tool output found for function call %s.", id)
		}
	}
}

func itemType(it map[string]any) string {
	if t := str(it["type"]); t != "" {
		return t
	}
	if _, ok := it["role"]; ok {
		return "message"
	}
	return ""
}

func (c *checker) responsesReasoning(items []any, i int, include string) {
	it := obj(items[i])
	id := str(it["id"])
	if _, ok := it["summary"]; !ok {
		c.fail("Input[%d] missing required field `summary`", i)
	}
	if str(it["encrypted_content"]) == "" {
		c.fail("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", id)
	}
	if !strings.Contains(include, "reasoning.encrypted_content") {
		c.fail("input[%d]: reasoning replayed without include reasoning.encrypted_content", i)
	}
	j := i + 1
	for j < len(items) && itemType(obj(items[j])) == "reasoning" {
		j++
	}
	next := map[string]any{}
	if j < len(items) {
		next = obj(items[j])
	}
	if t := itemType(next); !(t == "function_call" || t == "message" && str(next["role"]) == "assistant") {
		c.fail("Item '%s' of type 'reasoning' was provided without its required following item.", id)
	}
}

// responsesItemID checks that an output item with a provider ID follows
// the reasoning item that produced it.
func (c *checker) responsesItemID(items []any, i int, typ string) {
	id := str(obj(items[i])["id"])
	if id == "" {
		return
	}
	for j := i - 1; j >= 0; j-- {
		switch t := itemType(obj(items[j])); {
		case t == "reasoning":
			return
		case t == "function_call", t == "message" && str(obj(items[j])["role"]) == "assistant":
			continue
		}
		break
	}
	c.fail("Item '%s' of type '%s' was provided without its required 'reasoning' item.", id, typ)
}

// ---- Anthropic Messages (reference §1.3) ----

func (c *checker) anthropic(v map[string]any) {
	if num(v["max_tokens"]) <= 0 {
		c.fail("max_tokens: Field required")
	}
	thinking := c.anthropicThinkingConfig(v)
	c.anthropicSystem(v["system"])
	tools := map[string]bool{}
	for i, t := range list(v["tools"]) {
		if _, ok := obj(t)["input_schema"]; !ok {
			c.fail("tools.%d.custom.input_schema: Field required", i)
		}
		name := str(obj(t)["name"])
		if !anthropicName.MatchString(name) {
			c.fail("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
		tools[name] = true
	}
	msgs := c.anthropicMessages(list(v["messages"]))
	if len(msgs) > 0 {
		for k, b := range msgs[0].blocks {
			if str(b["type"]) == "tool_result" {
				c.fail("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", msgs[0].index, k, str(b["tool_use_id"]))
			}
		}
	}
	ids := map[string]bool{}
	for n, m := range msgs {
		c.anthropicBlocks(n, m, tools, ids)
		if m.role == "assistant" {
			c.anthropicToolUse(msgs, n)
		}
	}
	c.anthropicFinal(msgs, thinking)
}

// anthropicText applies the rules of a text block: non-empty, and not
// whitespace only (Claude itself emits "\n\n" before a tool_use).
func (c *checker) anthropicText(where, text string) {
	switch {
	case text == "":
		c.fail("%s: text content blocks must be non-empty", where)
	case strings.TrimSpace(text) == "":
		c.fail("%s: text content blocks must contain non-whitespace text", where)
	}
}

// anthropicResultContent checks the text inside a tool_result: a string
// content is one text block; an absent content is allowed.
func (c *checker) anthropicResultContent(where string, content any) {
	if s, ok := content.(string); ok {
		c.anthropicText(where+".content", s)
		return
	}
	for k, b := range list(content) {
		if str(obj(b)["type"]) == "text" {
			c.anthropicText(fmt.Sprintf("%s.content.%d", where, k), str(obj(b)["text"]))
		}
	}
}

// anthropicSystem checks the top-level system parameter: a string or
// text blocks, each under the text block rules.
func (c *checker) anthropicSystem(system any) {
	if s, ok := system.(string); ok {
		c.anthropicText("system", s)
		return
	}
	for k, b := range list(system) {
		c.anthropicText(fmt.Sprintf("system.%d", k), str(obj(b)["text"]))
	}
}

type anthropicMsg struct {
	index  int // position in "messages"
	role   string
	blocks []map[string]any
}

// anthropicMessages checks roles and alternation and returns the user and
// assistant messages (system messages are refused and left out).
func (c *checker) anthropicMessages(raw []any) []anthropicMsg {
	if len(raw) == 0 {
		c.fail("messages: at least one message is required")
	}
	var out []anthropicMsg
	for i, x := range raw {
		m := obj(x)
		role := str(m["role"])
		var blocks []map[string]any
		if s, ok := m["content"].(string); ok {
			blocks = []map[string]any{{"type": "text", "text": s}}
		}
		for _, b := range list(m["content"]) {
			blocks = append(blocks, obj(b))
		}
		if len(blocks) == 0 {
			c.fail("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		switch role {
		case "system":
			// No model takes role "system" inside messages, whatever its
			// capability row says (reference, additions of 2026-12-01).
			c.fail("messages.%d: Unexpected role \"system\". The Messages API accepts a top-level system parameter, not \"system\" as an input message role.", i)
			continue
		case "user", "assistant":
		default:
			c.fail("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if len(out) == 0 && role != "user" {
			c.fail("messages: first message must use the \"user\" role")
		}
		if len(out) > 0 && out[len(out)-1].role == role {
			c.fail("messages: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row", role)
		}
		out = append(out, anthropicMsg{index: i, role: role, blocks: blocks})
	}
	return out
}

func (c *checker) anthropicBlocks(n int, m anthropicMsg, tools, ids map[string]bool) {
	hasThinking := false
	for k, b := range m.blocks {
		switch typ := str(b["type"]); typ {
		case "text":
			c.anthropicText(fmt.Sprintf("messages.%d.content.%d", m.index, k), str(b["text"]))
		case "thinking", "redacted_thinking":
			hasThinking = true
			if m.role != "assistant" {
				c.fail("messages.%d.content.%d: thinking blocks are only allowed in assistant messages", m.index, k)
			}
			if typ == "thinking" && str(b["signature"]) == "" {
				c.fail("messages.%d.content.%d.thinking.signature: Field required", m.index, k)
			}
			if typ == "thinking" && str(b["thinking"]) == "" {
				c.fail("messages.%d.content.%d: each thinking block must contain thinking", m.index, k)
			}
		case "tool_use":
			id := str(b["id"])
			where := fmt.Sprintf("messages.%d.content.%d.tool_use.id", m.index, k)
			c.checkID(where, id)
			if ids[id] {
				c.fail("messages.%d.content.%d: `tool_use` ids must be unique", m.index, k)
			}
			ids[id] = true
			if _, ok := b["input"].(map[string]any); !ok {
				c.fail("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", m.index, k)
			}
			if len(tools) == 0 || !tools[str(b["name"])] {
				c.fail("Requests which include `tool_use` or `tool_result` blocks must define tools.")
			}
		case "tool_result":
			if len(tools) == 0 {
				c.fail("Requests which include `tool_use` or `tool_result` blocks must define tools.")
			}
			c.anthropicResultContent(fmt.Sprintf("messages.%d.content.%d", m.index, k), b["content"])
		}
	}
	if hasThinking {
		if t := str(m.blocks[0]["type"]); t != "thinking" && t != "redacted_thinking" {
			c.fail("messages.%d: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found %s.", m.index, t)
		}
	}
}

// anthropicToolUse checks that every tool_use of assistant message n is
// answered at the start of the next message, and that that message
// answers nothing else.
func (c *checker) anthropicToolUse(msgs []anthropicMsg, n int) {
	var uses []string
	for _, b := range msgs[n].blocks {
		if str(b["type"]) == "tool_use" {
			uses = append(uses, str(b["id"]))
		}
	}
	var next anthropicMsg
	if n+1 < len(msgs) {
		next = msgs[n+1]
	}
	lead := 0
	for lead < len(next.blocks) && str(next.blocks[lead]["type"]) == "tool_result" {
		lead++
	}
	answered := map[string]bool{}
	for k, b := range next.blocks {
		if str(b["type"]) != "tool_result" {
			continue
		}
		id := str(b["tool_use_id"])
		if !contains(uses, id) {
			c.fail("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", next.index, k, id)
		}
		answered[id] = true
	}
	var missing []string
	for _, id := range uses {
		if !answered[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		c.fail("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", msgs[n].index, strings.Join(missing, ", "))
	}
	if len(uses) > 0 && lead < len(uses) {
		c.fail("messages.%d: Did not find %d `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.", next.index, len(uses))
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (c *checker) anthropicThinkingConfig(v map[string]any) bool {
	t := obj(v["thinking"])
	switch str(t["type"]) {
	case "enabled":
		budget, maxTokens := num(t["budget_tokens"]), num(v["max_tokens"])
		if budget < 1024 {
			c.fail("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
		}
		if budget >= maxTokens {
			c.fail("`max_tokens` must be greater than `thinking.budget_tokens`")
		}
		if c.caps.Thinking == render.ThinkingNone {
			c.fail("thinking: this model does not support extended thinking")
		}
		return true
	case "adaptive":
		if c.caps.Thinking == render.ThinkingNone {
			c.fail("thinking: this model does not support extended thinking")
		}
		return true
	case "", "disabled":
		if c.caps.Thinking == render.ThinkingAlways {
			c.fail("thinking: thinking cannot be disabled for this model")
		}
	}
	return false
}

// anthropicFinal applies the thinking rules to the end of the request.
func (c *checker) anthropicFinal(msgs []anthropicMsg, thinking bool) {
	if len(msgs) == 0 {
		return
	}
	last := msgs[len(msgs)-1]
	if last.role == "assistant" {
		if b := last.blocks[len(last.blocks)-1]; str(b["type"]) == "text" && strings.TrimRightFunc(str(b["text"]), unicode.IsSpace) != str(b["text"]) {
			c.fail("messages.%d: final assistant content cannot end with trailing whitespace", last.index)
		}
	}
	check := -1
	switch {
	case last.role == "assistant":
		check = len(msgs) - 1
	case len(msgs) > 1 && hasBlock(last, "tool_result"):
		check = len(msgs) - 2
	}
	if check < 0 {
		return
	}
	if thinking {
		// The message before the last tool results, and the first
		// assistant message of the open turn: the turn goes back over user
		// messages that hold only tool results.
		c.anthropicLeadsWithThinking(msgs[check])
		if start := openTurnStart(msgs, check); start != check {
			c.anthropicLeadsWithThinking(msgs[start])
		}
	}
	if !thinking && last.role == "assistant" && (hasBlock(last, "thinking") || hasBlock(last, "redacted_thinking")) {
		c.fail("When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`.")
	}
}

// openTurnStart returns the index in msgs of the first assistant message
// of the turn that assistant message n belongs to: a user message of
// tool results only does not end a turn.
func openTurnStart(msgs []anthropicMsg, n int) int {
	for n >= 2 && msgs[n-1].role == "user" && onlyToolResults(msgs[n-1]) && msgs[n-2].role == "assistant" {
		n -= 2
	}
	return n
}

func onlyToolResults(m anthropicMsg) bool {
	for _, b := range m.blocks {
		if str(b["type"]) != "tool_result" {
			return false
		}
	}
	return true
}

// anthropicLeadsWithThinking applies the thinking-first rule of a final
// assistant turn with thinking enabled.
func (c *checker) anthropicLeadsWithThinking(m anthropicMsg) {
	if first := str(m.blocks[0]["type"]); first != "thinking" && first != "redacted_thinking" {
		c.fail("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.", m.index, first)
	}
}

func hasBlock(m anthropicMsg, typ string) bool {
	for _, b := range m.blocks {
		if str(b["type"]) == typ {
			return true
		}
	}
	return false
}

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

// ---- Ollama native chat (reference §1.5) ----

func (c *checker) ollama(v map[string]any) {
	msgs := list(v["messages"])
	if len(msgs) == 0 {
		c.fail("messages: at least one message is required")
	}
	for i := 0; i < len(msgs); i++ {
		m := obj(msgs[i])
		switch role := str(m["role"]); role {
		case "system", "user":
		case "assistant":
			i = c.ollamaAssistant(msgs, i)
		case "tool":
			c.fail("messages[%d]: tool message without a preceding assistant tool call", i)
		default:
			c.fail("messages[%d]: invalid role %q", i, role)
		}
	}
}

func (c *checker) ollamaAssistant(msgs []any, i int) int {
	m := obj(msgs[i])
	want := map[string]string{}
	var order []string
	for k, tc := range list(m["tool_calls"]) {
		fn := obj(obj(tc)["function"])
		if _, ok := fn["arguments"].(map[string]any); !ok {
			c.fail("messages[%d].tool_calls[%d]: Value looks like object, but can't find closing '}' symbol", i, k)
		}
		id := str(obj(tc)["id"])
		want[id] = str(fn["name"])
		order = append(order, id)
	}
	j := i + 1
	for ; j < len(msgs) && str(obj(msgs[j])["role"]) == "tool"; j++ {
		t := obj(msgs[j])
		id := str(t["tool_call_id"])
		name, ok := want[id]
		if !ok || name != str(t["tool_name"]) {
			c.fail("messages[%d]: tool result %q (%s) answers no call of the preceding assistant message", j, id, str(t["tool_name"]))
		}
		delete(want, id)
	}
	for _, id := range order {
		if _, ok := want[id]; ok {
			c.fail("messages[%d]: tool call %s has no tool message after it", i, id)
		}
	}
	return j - 1
}

// ValidateReport checks a render's report against its body: every call ID
// the report says was remapped is an ID the body carries (a remapping of a
// call sent without an ID, as Gemini sends other models' calls, is not
// something the body contains).
func ValidateReport(t render.Target, body []byte, rep *render.Report) error {
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("request body is not a JSON object: %w", err)
	}
	ids := bodyCallIDs(t.API, v)
	c := &checker{}
	for _, m := range rep.Remapped {
		if !ids[m.To] {
			c.fail("report: call ID %s remapped to %s, which the body does not carry", m.From, m.To)
		}
	}
	return errors.Join(c.errs...)
}

// bodyCallIDs returns the call IDs of the calls in a request body.
func bodyCallIDs(api render.API, v map[string]any) map[string]bool {
	ids := map[string]bool{}
	switch api {
	case render.OpenAIChat, render.Ollama:
		for _, m := range list(v["messages"]) {
			for _, tc := range list(obj(m)["tool_calls"]) {
				ids[str(obj(tc)["id"])] = true
			}
		}
	case render.OpenAIResponses:
		for _, it := range list(v["input"]) {
			if str(obj(it)["type"]) == "function_call" {
				ids[str(obj(it)["call_id"])] = true
			}
		}
	case render.Anthropic:
		for _, m := range list(v["messages"]) {
			for _, b := range list(obj(m)["content"]) {
				if str(obj(b)["type"]) == "tool_use" {
					ids[str(obj(b)["id"])] = true
				}
			}
		}
	case render.Gemini:
		for _, content := range list(v["contents"]) {
			for _, p := range list(obj(content)["parts"]) {
				if id := str(obj(obj(p)["functionCall"])["id"]); id != "" {
					ids[id] = true
				}
			}
		}
	}
	return ids
}
