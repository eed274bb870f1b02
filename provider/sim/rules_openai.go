package sim

import (
	"fmt"
	"net/http"
	"strings"
)

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
		c.failStatus(http.StatusNotFound, "Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", id)
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
