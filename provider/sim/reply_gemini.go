package sim

import (
	"net/http"
)

// geminiParts returns the model's parts: a thought part when the request
// asks for thoughts, then the text or the calls; the signature goes on the
// first function call, or on the text when there is no call (Gemini 3).
func (r *reply) geminiParts() []map[string]any {
	var out []map[string]any
	if r.turn.reasoning != "" && obj(obj(r.body["generationConfig"])["thinkingConfig"])["includeThoughts"] == true {
		out = append(out, map[string]any{"text": r.turn.reasoning, "thought": true})
	}
	sig := r.sign.issue(sigThought, r.model, r.digest, "")
	if r.turn.text != "" {
		p := map[string]any{"text": r.turn.text}
		if len(r.turn.calls) == 0 {
			p["thoughtSignature"] = sig
		}
		out = append(out, p)
	}
	for i, c := range r.turn.calls {
		p := map[string]any{"functionCall": map[string]any{"name": c.name, "args": argsObject(c.args)}}
		if i == 0 {
			p["thoughtSignature"] = sig
		}
		out = append(out, p)
	}
	return out
}

func (r *reply) geminiChunk(parts []map[string]any, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": r.model, "responseId": r.id("", 0)}
	if last {
		cand["finishReason"] = "STOP"
	}
	usage := map[string]any{"promptTokenCount": r.inTok, "totalTokenCount": r.inTok}
	if last {
		usage["candidatesTokenCount"] = r.outTok() - r.reasonTok()
		usage["thoughtsTokenCount"] = r.reasonTok()
		usage["totalTokenCount"] = r.inTok + r.outTok()
	}
	out["usageMetadata"] = usage
	return out
}

func (r *reply) gemini(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, r.geminiChunk(r.geminiParts(), true))
}

// geminiStream sends one chunk per part (a text part in pieces, the
// signature on its first piece), the last chunk with the finish reason
// and the usage. Without alt=sse the chunks go as one JSON array, as the
// REST API does.
func (r *reply) geminiStream(w http.ResponseWriter, sse bool) {
	var chunks []map[string]any
	parts := r.geminiParts()
	for _, p := range parts {
		t, isText := p["text"].(string)
		if !isText || p["thought"] == true {
			chunks = append(chunks, r.geminiChunk([]map[string]any{p}, false))
			continue
		}
		for k, piece := range pieces(t) {
			q := map[string]any{"text": piece}
			if sig, ok := p["thoughtSignature"]; ok && k == 0 {
				q["thoughtSignature"] = sig
			}
			chunks = append(chunks, r.geminiChunk([]map[string]any{q}, false))
		}
	}
	chunks = append(chunks, r.geminiChunk([]map[string]any{{"text": ""}}, true))
	if !sse {
		writeJSON(w, http.StatusOK, chunks)
		return
	}
	s := newStream(w, "text/event-stream")
	for _, c := range chunks {
		s.event("", c)
	}
}
