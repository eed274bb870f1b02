package sim

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/agentcapsule/capsule/render"
)

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
			continue
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
