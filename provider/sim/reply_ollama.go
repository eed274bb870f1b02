package sim

import (
	"net/http"
)

func (r *reply) ollamaCalls() []any {
	var out []any
	for i, c := range r.turn.calls {
		out = append(out, map[string]any{"id": r.id("call_", i), "function": map[string]any{"index": i, "name": c.name, "arguments": argsObject(c.args)}})
	}
	return out
}

func (r *reply) ollamaChunk(msg map[string]any, done bool) map[string]any {
	msg["role"] = "assistant"
	if _, ok := msg["content"]; !ok {
		msg["content"] = ""
	}
	out := map[string]any{"model": r.model, "created_at": createdText, "message": msg, "done": done}
	if done {
		out["done_reason"] = "stop"
		out["total_duration"], out["load_duration"] = 1000000, 0
		out["prompt_eval_count"], out["prompt_eval_duration"] = r.inTok, 1000
		out["eval_count"], out["eval_duration"] = r.outTok(), 1000
	}
	return out
}

func (r *reply) ollamaMessage() map[string]any {
	msg := map[string]any{"content": r.turn.text}
	if r.conv.thinking && r.turn.reasoning != "" {
		msg["thinking"] = r.turn.reasoning
	}
	if calls := r.ollamaCalls(); len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	return msg
}

func (r *reply) ollama(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, r.ollamaChunk(r.ollamaMessage(), true))
}

// ollamaStream sends NDJSON: the thinking, the text in pieces, the calls,
// then an empty done message with the counts.
func (r *reply) ollamaStream(w http.ResponseWriter) {
	s := newStream(w, "application/x-ndjson")
	if r.conv.thinking && r.turn.reasoning != "" {
		s.line(r.ollamaChunk(map[string]any{"thinking": r.turn.reasoning}, false))
	}
	for _, p := range pieces(r.turn.text) {
		s.line(r.ollamaChunk(map[string]any{"content": p}, false))
	}
	if calls := r.ollamaCalls(); len(calls) > 0 {
		s.line(r.ollamaChunk(map[string]any{"tool_calls": calls}, false))
	}
	s.line(r.ollamaChunk(map[string]any{}, true))
}
