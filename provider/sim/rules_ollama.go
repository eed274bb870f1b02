package sim

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
