package sim

import (
	"net/http"
)

// Ollama's /api/embed, as its server (server/routes.go, EmbedHandler)
// answers it: input a string (an empty one embeds nothing) or an array
// of strings, anything else "invalid input type"; an unknown model 404
// "model 'M' not found"; input past the model's context cut to fit, or,
// with "truncate": false, refused 400 with the runner's message; a
// dimensions below the model's length cuts the vector and normalises it
// again (here: the vector is computed at that length).
var ollamaEmbeddings = embedAPI{api: OllamaEmbed, parse: parseOllamaEmbed, write: writeOllamaEmbed}

func parseOllamaEmbed(_ *http.Request, v map[string]any) (embedJob, *Violation) {
	job := embedJob{model: str(v["model"])}
	texts, ok := ollamaInputs(v["input"])
	if !ok {
		return job, bad(http.StatusBadRequest, "invalid input type")
	}
	if !isEmbedModel(job.model) {
		return job, bad(http.StatusNotFound, "model '%s' not found", job.model)
	}
	truncate := true
	if t, ok := v["truncate"].(bool); ok {
		truncate = t
	}
	dims := EmbedDims
	if d, isInt := integer(v["dimensions"]); isInt && d > 0 && d < EmbedDims {
		dims = int(d)
	}
	for _, t := range texts {
		if tokens(t) > EmbedContext {
			if !truncate {
				return job, bad(http.StatusBadRequest, "the input length exceeds the context length")
			}
			t = truncateTokens(t, EmbedContext)
		}
		job.items = append(job.items, embedItem{text: t, dims: dims})
	}
	return job, nil
}

// ollamaInputs reads input: a string (none when empty), an array of
// strings, or nothing.
func ollamaInputs(in any) ([]string, bool) {
	switch x := in.(type) {
	case nil:
		return nil, true
	case string:
		if x == "" {
			return nil, true
		}
		return []string{x}, true
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

func writeOllamaEmbed(w http.ResponseWriter, job embedJob, vecs [][]float32, c Corruption) {
	vecs = corruptVectors(vecs, c)
	embs := make([]any, len(vecs))
	for i, v := range vecs {
		embs[i] = v
	}
	n := 0
	for _, it := range job.items {
		n += tokens(it.text)
	}
	writeEmbedJSON(w, map[string]any{"model": job.model, "embeddings": embs, "prompt_eval_count": n}, c)
}
