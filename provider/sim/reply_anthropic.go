package sim

import (
	"encoding/json"
	"net/http"
)

// anthropicBlocks returns the content blocks: thinking with a signature
// (when the request enables thinking), text, tool_use.
func (r *reply) anthropicBlocks() []map[string]any {
	var out []map[string]any
	if r.conv.thinking && r.turn.reasoning != "" {
		out = append(out, map[string]any{"type": "thinking", "thinking": r.turn.reasoning,
			"signature": r.sign.issue(sigThinking, r.model, r.digest, r.turn.reasoning)})
	}
	if r.turn.text != "" {
		out = append(out, map[string]any{"type": "text", "text": r.turn.text})
	}
	for i, c := range r.turn.calls {
		out = append(out, map[string]any{"type": "tool_use", "id": r.id("toolu_", i), "name": c.name, "input": argsObject(c.args)})
	}
	return out
}

func (r *reply) stopReason() string {
	if len(r.turn.calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (r *reply) anthropicMessage(content []map[string]any, stop any, out int) map[string]any {
	return map[string]any{"id": r.id("msg_", 0), "type": "message", "role": "assistant", "model": r.model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": r.inTok, "output_tokens": out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
}

func (r *reply) anthropic(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, r.anthropicMessage(r.anthropicBlocks(), r.stopReason(), r.outTok()))
}

func (r *reply) anthropicStream(w http.ResponseWriter) {
	s := newStream(w, "text/event-stream")
	ev := func(typ string, data map[string]any) {
		data["type"] = typ
		s.event(typ, data)
	}
	ev("message_start", map[string]any{"message": r.anthropicMessage([]map[string]any{}, nil, 1)})
	for i, b := range r.anthropicBlocks() {
		r.anthropicStreamBlock(ev, i, b)
	}
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": r.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": r.outTok()}})
	ev("message_stop", map[string]any{})
}

func (r *reply) anthropicStreamBlock(ev func(string, map[string]any), i int, b map[string]any) {
	delta := func(d map[string]any) { ev("content_block_delta", map[string]any{"index": i, "delta": d}) }
	switch b["type"] {
	case "thinking":
		ev("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, p := range pieces(b["thinking"].(string)) {
			delta(map[string]any{"type": "thinking_delta", "thinking": p})
		}
		delta(map[string]any{"type": "signature_delta", "signature": b["signature"]})
	case "text":
		ev("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces(b["text"].(string)) {
			delta(map[string]any{"type": "text_delta", "text": p})
		}
	case "tool_use":
		ev("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
		args, _ := json.Marshal(b["input"])
		delta(map[string]any{"type": "input_json_delta", "partial_json": string(args)})
	}
	ev("content_block_stop", map[string]any{"index": i})
}
