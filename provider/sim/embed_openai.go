package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
)

// OpenAI's documented limits on POST /v1/embeddings (API reference,
// "Create embeddings", input): at most 2048 inputs, none empty, each at
// most 8192 tokens, and at most 300,000 tokens summed over the inputs of
// one request.
const (
	openaiMaxInputs        = 2048
	openaiMaxInputTokens   = 8192
	openaiMaxRequestTokens = 300000
)

// openaiInputInvalid is OpenAI's answer to an input that is not a
// non-empty string or a list of 1..2048 non-empty strings.
const openaiInputInvalid = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."

var openaiEmbeddings = embedAPI{api: OpenAIEmbeddings, parse: parseOpenAIEmbed, write: writeOpenAIEmbed}

func bad(status int, format string, args ...any) *Violation {
	return &Violation{Status: status, Message: fmt.Sprintf(format, args...)}
}

// parseOpenAIEmbed applies OpenAI's rules: model, input (a string or an
// array of strings; token arrays are not served), dimensions and
// encoding_format.
func parseOpenAIEmbed(_ *http.Request, v map[string]any) (embedJob, *Violation) {
	job := embedJob{model: str(v["model"])}
	if job.model == "" {
		return job, bad(http.StatusBadRequest, "you must provide a model parameter")
	}
	if !isEmbedModel(job.model) {
		u := unknownModel("", job.model)
		return job, &u
	}
	texts, ok := openaiInputs(v["input"])
	if !ok {
		return job, bad(http.StatusBadRequest, openaiInputInvalid)
	}
	total := 0
	for i, t := range texts {
		n := tokens(t)
		if n > openaiMaxInputTokens {
			return job, bad(http.StatusBadRequest, "Invalid 'input[%d]': maximum input length is %d tokens.", i, openaiMaxInputTokens)
		}
		total += n
	}
	if total > openaiMaxRequestTokens {
		return job, bad(http.StatusBadRequest, "Requested %d tokens, max %d tokens per request", total, openaiMaxRequestTokens)
	}
	dims := EmbedDims
	if d, ok := v["dimensions"]; ok && d != nil {
		n, isInt := integer(d)
		if !isInt || n < 1 || n > EmbedDims {
			return job, bad(http.StatusBadRequest, "Invalid value for 'dimensions': %v. It must be an integer between 1 and %d for model %s.", d, EmbedDims, job.model)
		}
		dims = int(n)
	}
	for _, t := range texts {
		job.items = append(job.items, embedItem{text: t, dims: dims})
	}
	switch f := v["encoding_format"]; f {
	case nil, "float":
	case "base64":
		job.base64 = true
	default:
		return job, bad(http.StatusBadRequest, "Invalid value for 'encoding_format': %v. Supported values are: 'float' and 'base64'.", f)
	}
	return job, nil
}

// openaiInputs reads input: a non-empty string, or 1..2048 of them.
func openaiInputs(in any) ([]string, bool) {
	if s, ok := in.(string); ok {
		return []string{s}, s != ""
	}
	l, ok := in.([]any)
	if !ok || len(l) == 0 || len(l) > openaiMaxInputs {
		return nil, false
	}
	out := make([]string, len(l))
	for i, x := range l {
		s, ok := x.(string)
		if !ok || s == "" {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// integer reads a JSON number that is an integer.
func integer(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

func writeOpenAIEmbed(w http.ResponseWriter, job embedJob, vecs [][]float32, c Corruption) {
	vecs = corruptVectors(vecs, c)
	data := make([]any, len(vecs))
	for i, v := range vecs {
		var emb any
		if job.base64 {
			emb = base64Floats(v)
		} else {
			emb = v
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
	}
	n := 0
	for _, it := range job.items {
		n += tokens(it.text)
	}
	writeEmbedJSON(w, map[string]any{"object": "list", "data": data, "model": job.model,
		"usage": map[string]any{"prompt_tokens": n, "total_tokens": n}}, c)
}

// base64Floats is OpenAI's base64 encoding of a vector: its float32
// values, little-endian, in standard base64.
func base64Floats(v []float32) string {
	var b bytes.Buffer
	for _, x := range v {
		if x == nanSentinel {
			x = float32(math.NaN())
		}
		binary.Write(&b, binary.LittleEndian, x)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}
