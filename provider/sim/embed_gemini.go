package sim

import (
	"fmt"
	"net/http"
	"strings"
)

// Gemini's limits on embedContent and batchEmbedContents: at most 100
// requests in one batch (the API's error "at most 100 requests can be in
// one batch"), and gemini-embedding-001's documented 2,048-token input
// limit. What the Gemini API does with longer input is not documented;
// the simulator cuts it, as Vertex AI's autoTruncate (default true) does.
const (
	geminiMaxBatch     = 100
	geminiInputTokens  = 2048
	geminiBatchPrefix  = "* BatchEmbedContentsRequest."
	geminiSinglePrefix = "* EmbedContentRequest."
)

// geminiTaskTypes are the values of the API's TaskType enum.
var geminiTaskTypes = map[string]bool{"TASK_TYPE_UNSPECIFIED": true, "RETRIEVAL_QUERY": true, "RETRIEVAL_DOCUMENT": true,
	"SEMANTIC_SIMILARITY": true, "CLASSIFICATION": true, "CLUSTERING": true, "QUESTION_ANSWERING": true,
	"FACT_VERIFICATION": true, "CODE_RETRIEVAL_QUERY": true}

var geminiEmbeddings = embedAPI{api: GeminiEmbed, parse: parseGeminiEmbed, write: writeGeminiEmbed}

// parseGeminiEmbed applies Gemini's rules to embedContent (one request
// in the body) or batchEmbedContents ("requests"): the model in the path,
// each request's model matching it, text parts, taskType and
// outputDimensionality. Every request of a batch must agree on taskType
// and outputDimensionality (the simulator answers one job).
func parseGeminiEmbed(r *http.Request, v map[string]any) (embedJob, *Violation) {
	model, method, _ := strings.Cut(geminiResource(r.URL.Path), ":")
	job := embedJob{model: model, single: method == "embedContent"}
	if !isEmbedModel(model) {
		return job, bad(http.StatusNotFound, "models/%s is not found for API version v1beta, or is not supported for %s. (capsule-sim serves %v)", model, method, EmbedModels)
	}
	reqs := []any{v}
	prefix := geminiSinglePrefix
	if !job.single {
		reqs, prefix = list(v["requests"]), geminiBatchPrefix
		if len(reqs) == 0 {
			return job, bad(http.StatusBadRequest, "%srequests: must contain at least one request", prefix)
		}
		if len(reqs) > geminiMaxBatch {
			return job, bad(http.StatusBadRequest, "%srequests: at most %d requests can be in one batch\n", prefix, geminiMaxBatch)
		}
	}
	for i, x := range reqs {
		if err := job.addGemini(obj(x), i, prefix); err != nil {
			return job, err
		}
	}
	return job, nil
}

// addGemini checks one request of a batch (i) and adds its text.
func (job *embedJob) addGemini(q map[string]any, i int, prefix string) *Violation {
	where := prefix
	if prefix == geminiBatchPrefix {
		where = fmt.Sprintf("%srequests[%d].", prefix, i)
	}
	if m, ok := q["model"]; ok || prefix == geminiBatchPrefix {
		if want := "models/" + job.model; str(m) != want {
			return bad(http.StatusBadRequest, "%smodel: the request's model %q does not match the model of the URL, %q", where, str(m), want)
		}
	}
	text, err := geminiText(obj(q["content"]), where)
	if err != nil {
		return err
	}
	task, dims := str(q["taskType"]), EmbedDims
	if t, ok := q["taskType"]; ok && !geminiTaskTypes[str(t)] {
		return bad(http.StatusBadRequest, "Invalid value at '%stask_type' (type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType), %v", strings.TrimPrefix(where, "* "), t)
	}
	if d, ok := q["outputDimensionality"]; ok {
		n, isInt := integer(d)
		if !isInt || n < 1 || n > EmbedDims {
			return bad(http.StatusBadRequest, "%soutput_dimensionality: must be between 1 and %d for %s, got %v", where, EmbedDims, job.model, d)
		}
		dims = int(n)
	}
	job.items = append(job.items, embedItem{text: truncateTokens(text, geminiInputTokens), task: task, dims: dims})
	return nil
}

// geminiText joins the text parts of a content; a part without data, or
// without text, is refused.
func geminiText(c map[string]any, where string) (string, *Violation) {
	parts := list(c["parts"])
	if len(parts) == 0 {
		return "", bad(http.StatusBadRequest, "%scontent.parts: contents.parts must not be empty.", where)
	}
	var b strings.Builder
	for k, x := range parts {
		p := obj(x)
		t, ok := p["text"].(string)
		switch {
		case !hasData(p):
			return "", bad(http.StatusBadRequest, "%scontent.parts[%d].data: required oneof field 'data' must have one initialized field", where, k)
		case !ok:
			return "", bad(http.StatusBadRequest, "%scontent.parts[%d]: capsule-sim embeds text parts only", where, k)
		}
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	}
	if b.Len() == 0 {
		return "", bad(http.StatusBadRequest, "%scontent.parts[0].text: text must not be empty", where)
	}
	return b.String(), nil
}

func writeGeminiEmbed(w http.ResponseWriter, job embedJob, vecs [][]float32, c Corruption) {
	vecs = corruptVectors(vecs, c)
	embs := make([]any, len(vecs))
	for i, v := range vecs {
		embs[i] = map[string]any{"values": v}
	}
	if job.single && len(embs) == 1 {
		writeEmbedJSON(w, map[string]any{"embedding": embs[0]}, c)
		return
	}
	writeEmbedJSON(w, map[string]any{"embeddings": embs}, c)
}
