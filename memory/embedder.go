// Package memory is the agent's semantic memory: the index of
// memory/vector_index/index.json (FORMAT §11.7.2), derived from the journal
// and the working memory and never trusted, the embedders that fill it, and
// search over it.
package memory

import (
	"context"
	"strconv"
)

// Identity says what makes an embedder's vectors comparable with another's.
// The index adds its own data type, tokenizer and chunker versions and
// fingerprints the whole (FORMAT §11.7.2); Name is for display and is never
// compared.
type Identity struct {
	// Name is a display name, e.g. "capsule-hash" or "openai:text-embedding-3-small".
	Name string
	// Dims is the length of every vector Embed returns.
	Dims int
	// Model is a digest ("sha256:…") of what computes the vectors: the
	// weights, or for a remote endpoint its provider, model name and any
	// option that changes the vectors (dimensions, task type).
	Model string
	// Tokenizer names the tokenizer and its version the model uses
	// ("capsule-tok/1" for the built-in one, the provider's otherwise).
	Tokenizer string
	// Normalized is true when every vector has unit L2 norm.
	Normalized bool
}

// Embedder computes one vector per text.
type Embedder interface {
	// Identity describes the vectors Embed returns; it does not change
	// during the embedder's life.
	Identity() Identity
	// Embed returns one vector of Identity().Dims values per text, in
	// order. It returns an *EmbedError when texts were refused one by one
	// (even all of them), and another error when the call failed as a
	// whole (the endpoint, the key, the answer).
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedError reports the texts an embedder could not embed. Vectors of the
// other texts are still returned (nil for the failed ones).
type EmbedError struct {
	// Failed holds the index in the input of each text that failed, with its reason.
	Failed map[int]error
}

func (e *EmbedError) Error() string {
	first := -1
	for i := range e.Failed {
		if first < 0 || i < first {
			first = i
		}
	}
	switch {
	case first < 0:
		return "memory: embed: no text failed"
	case len(e.Failed) == 1:
		return "memory: embed text " + strconv.Itoa(first) + ": " + e.Failed[first].Error()
	}
	return "memory: " + strconv.Itoa(len(e.Failed)) + " texts could not be embedded; the first, text " +
		strconv.Itoa(first) + ": " + e.Failed[first].Error()
}
