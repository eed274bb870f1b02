package remote

import (
	"fmt"
	"strings"
)

// knownDims are the default vector lengths of the models whose length
// the providers document (OpenAI's embeddings guide, Gemini's model
// pages, the Ollama library), and of the simulator's capsule-sim/embed
// (provider/sim.EmbedDims; a test keeps the two equal).
var knownDims = map[Provider]map[string]int{
	OpenAI: {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536, "capsule-sim/embed": 768},
	Gemini: {"gemini-embedding-001": 3072, "text-embedding-004": 768, "capsule-sim/embed": 768},
	Ollama: {"nomic-embed-text": 768, "mxbai-embed-large": 1024, "all-minilm": 384, "capsule-sim/embed": 768},
}

// fixedDims are models that take no dimensions parameter (OpenAI answers
// "This model does not support specifying dimensions.").
var fixedDims = map[string]bool{"text-embedding-ada-002": true}

// resolveDims returns the vector length and the dimensions to send (0:
// none, the model's default). Dims equal to the known default are not
// sent, so Dims 0 and Dims = default are one embedder with one digest.
func resolveDims(cfg Config) (dims, sent int, err error) {
	models, ok := knownDims[cfg.Provider]
	switch {
	case !ok:
		return 0, 0, fmt.Errorf("%w: unknown provider %q (want openai, gemini or ollama)", ErrConfig, cfg.Provider)
	case cfg.Model == "":
		return 0, 0, fmt.Errorf("%w: %s: no model", ErrConfig, cfg.Provider)
	case cfg.Dims < 0:
		return 0, 0, fmt.Errorf("%w: %s %s: dims %d", ErrConfig, cfg.Provider, cfg.Model, cfg.Dims)
	}
	def, known := models[strings.TrimSuffix(cfg.Model, ":latest")]
	switch {
	case cfg.Dims == 0 && !known:
		return 0, 0, fmt.Errorf("%w: %s %s: its default dimensions are not known; set dims", ErrConfig, cfg.Provider, cfg.Model)
	case cfg.Dims == 0 || cfg.Dims == def:
		return def, 0, nil
	case fixedDims[cfg.Model]:
		return 0, 0, fmt.Errorf("%w: %s %s has %d dimensions and takes no other", ErrConfig, cfg.Provider, cfg.Model, def)
	}
	return cfg.Dims, cfg.Dims, nil
}

// limits bound one request.
type limits struct {
	texts int // the most texts
	bytes int // the most bytes of text, summed
}

// batchLimits are each provider's documented limits per request: OpenAI
// takes at most 2048 inputs and 300,000 tokens summed over them (a token
// is at least one byte, so 300,000 bytes never exceed it); Gemini's
// batchEmbedContents at most 100 requests (and 4 MB of payload: 2 MiB of
// text leaves room for JSON escaping); Ollama documents no limit, so 128
// texts and 4 MiB bound the time one request holds the model.
var batchLimits = map[Provider]limits{
	OpenAI: {texts: 2048, bytes: 300000},
	Gemini: {texts: 100, bytes: 2 << 20},
	Ollama: {texts: 128, bytes: 4 << 20},
}

// cap lowers the text limit to n when 0 < n < it.
func (l limits) cap(n int) limits {
	if n > 0 && n < l.texts {
		l.texts = n
	}
	return l
}

// batches splits the texts at idx into requests within l, in order; a
// text longer than l.bytes goes alone.
func (l limits) batches(texts []string, idx []int) [][]int {
	var out [][]int
	var cur []int
	size := 0
	for _, i := range idx {
		if len(cur) > 0 && (len(cur) >= l.texts || size+len(texts[i]) > l.bytes) {
			out, cur, size = append(out, cur), nil, 0
		}
		cur = append(cur, i)
		size += len(texts[i])
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
