package sim

import (
	"net/http"
)

// ---- Chat Completions ----

func (r *reply) chatToolCalls(delta bool) []any {
	var out []any
	for i, c := range r.turn.calls {
		tc := map[string]any{"id": r.id("call_", i), "type": "function", "function": map[string]any{"name": c.name, "arguments": string(c.args)}}
		if delta {
			tc["index"] = i
		}
		out = append(out, tc)
	}
	return out
}

func (r *reply) finish() string {
	if len(r.turn.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (r *reply) chatUsage() map[string]any {
	return map[string]any{"prompt_tokens": r.inTok, "completion_tokens": r.outTok(), "total_tokens": r.inTok + r.outTok(),
		"completion_tokens_details": map[string]any{"reasoning_tokens": r.reasonTok()}}
}

func (r *reply) chat(w http.ResponseWriter) {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if r.turn.text != "" {
		msg["content"] = r.turn.text
	}
	if calls := r.chatToolCalls(false); len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": r.id("chatcmpl-", 0), "object": "chat.completion", "created": created, "model": r.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": r.finish(), "logprobs": nil}},
		"usage":   r.chatUsage(),
	})
}

func (r *reply) chatStream(w http.ResponseWriter) {
	s := newStream(w, "text/event-stream")
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": r.id("chatcmpl-", 0), "object": "chat.completion.chunk", "created": created, "model": r.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}}
	}
	s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, p := range pieces(r.turn.text) {
		s.event("", chunk(map[string]any{"content": p}, nil))
	}
	for i, tc := range r.chatToolCalls(true) {
		call := tc.(map[string]any)
		fn := call["function"].(map[string]any)
		s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": call["id"], "type": "function",
			"function": map[string]any{"name": fn["name"], "arguments": ""}}}}, nil))
		s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": fn["arguments"]}}}}, nil))
	}
	s.event("", chunk(map[string]any{}, r.finish()))
	if obj(r.body["stream_options"])["include_usage"] == true {
		s.event("", map[string]any{"id": r.id("chatcmpl-", 0), "object": "chat.completion.chunk", "created": created, "model": r.model,
			"choices": []any{}, "usage": r.chatUsage()})
	}
	s.write([]byte("data: [DONE]\n\n"))
}

// ---- Responses ----

// responsesItems returns the output items: reasoning (with encrypted
// content when the request includes it), function calls, a message.
func (r *reply) responsesItems() []map[string]any {
	var items []map[string]any
	if r.turn.reasoning != "" {
		id := r.id("rs_", 0)
		it := map[string]any{"type": "reasoning", "id": id, "summary": []any{map[string]any{"type": "summary_text", "text": r.turn.reasoning}}}
		if r.conv.thinking {
			it["encrypted_content"] = r.sign.issue(sigEncrypted, r.model, r.digest, id)
		}
		items = append(items, it)
	}
	for i, c := range r.turn.calls {
		items = append(items, map[string]any{"type": "function_call", "id": r.id("fc_", i), "call_id": r.id("call_", i),
			"name": c.name, "arguments": string(c.args), "status": "completed"})
	}
	if r.turn.text != "" {
		items = append(items, map[string]any{"type": "message", "id": r.id("msg_", 0), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": r.turn.text, "annotations": []any{}}}})
	}
	return items
}

func (r *reply) response(status string, output []map[string]any) map[string]any {
	resp := map[string]any{"id": r.id("resp_", 0), "object": "response", "created_at": created, "status": status, "model": r.model,
		"output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "store": false,
		"error": nil, "incomplete_details": nil, "metadata": map[string]any{}, "text": map[string]any{"format": map[string]any{"type": "text"}}}
	if status == "completed" {
		resp["usage"] = map[string]any{"input_tokens": r.inTok, "output_tokens": r.outTok(), "total_tokens": r.inTok + r.outTok(),
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": r.reasonTok()}}
	}
	return resp
}

func (r *reply) responses(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, r.response("completed", r.responsesItems()))
}

func (r *reply) responsesStream(w http.ResponseWriter) {
	s := newStream(w, "text/event-stream")
	seq := 0
	ev := func(typ string, data map[string]any) {
		data["type"], data["sequence_number"] = typ, seq
		seq++
		s.event(typ, data)
	}
	ev("response.created", map[string]any{"response": r.response("in_progress", []map[string]any{})})
	ev("response.in_progress", map[string]any{"response": r.response("in_progress", []map[string]any{})})
	items := r.responsesItems()
	for i, it := range items {
		r.responsesStreamItem(ev, i, it)
	}
	ev("response.completed", map[string]any{"response": r.response("completed", items)})
}

func (r *reply) responsesStreamItem(ev func(string, map[string]any), i int, it map[string]any) {
	id := it["id"]
	switch it["type"] {
	case "reasoning":
		ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "reasoning", "id": id, "summary": []any{}}})
	case "function_call":
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["arguments"], added["status"] = "", "in_progress"
		ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
		ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": it["arguments"]})
		ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": it["arguments"]})
	case "message":
		ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}}})
		empty := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		ev("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": empty})
		for _, p := range pieces(r.turn.text) {
			ev("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": p})
		}
		ev("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": r.turn.text})
		ev("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": r.turn.text, "annotations": []any{}}})
	}
	ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
}
