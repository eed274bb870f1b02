// Package remote holds the embedders that call a provider's embeddings
// API for the memory index: OpenAI POST {base}/embeddings (through
// openai-go), Gemini batchEmbedContents (through google.golang.org/genai's
// Models.EmbedContent) and Ollama POST {base}/api/embed (net/http with the
// official client's types, for the reason package provider/ollama gives:
// the official client signs requests with a private key it reads from
// ~/.ollama, a secret this package must not read). Each is a
// memory.Embedder; the embedded model endpoint (provider/sim) serves all
// three, so this package is tested offline through the real SDKs.
//
// The key is passed to New by the caller, who resolves it from the host's
// secret store; an embedder never reads the environment for one, never
// logs it, and scrubs it from every error it returns.
//
// Edge packages that build a memory index (the node, the CLI) may import
// it; no pure package may: it does network I/O.
package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentcapsule/capsule/memory"
	"github.com/agentcapsule/capsule/provider"
)

// Provider names an embeddings API.
type Provider string

// The providers an embedder can call.
const (
	OpenAI Provider = "openai"
	Gemini Provider = "gemini"
	Ollama Provider = "ollama"
)

// ErrConfig is wrapped by New's errors for a configuration it cannot serve.
var ErrConfig = errors.New("remote: bad embedder config")

// Config chooses a remote embedder. It comes from the environment spec.
type Config struct {
	// Provider is OpenAI, Gemini or Ollama.
	Provider Provider
	// Model is the provider's model name, e.g. "text-embedding-3-small".
	Model string
	// URL is the API's base, as each provider's client takes it: OpenAI's
	// ends in /v1 ("https://api.openai.com/v1"), Gemini's and Ollama's are
	// the server's root ("https://generativelanguage.googleapis.com",
	// "http://127.0.0.1:11434"). Empty means the provider's public URL.
	URL string
	// Dims is the vector length to ask for; 0 means the model's default,
	// which must then be known (knownDims).
	Dims int
	// TaskType is Gemini's taskType (e.g. "RETRIEVAL_DOCUMENT"); empty
	// sends none. Other providers refuse it.
	TaskType string
	// Batch is the most texts sent in one request; 0 or more than the
	// provider's limit means that limit (batchLimits).
	Batch int
	// Retry bounds the retries of each request on 408, 429, 5xx and
	// dropped connections; the zero value means provider.DefaultRetry.
	Retry provider.Retry
	// HTTP sends the requests; nil means http.DefaultClient.
	HTTP *http.Client
}

// embedder is a memory.Embedder for one Config.
type embedder struct {
	cfg    Config
	id     memory.Identity
	key    string
	be     backend
	limits limits
}

// backend makes one embeddings request. An HTTP error is a
// *provider.Error (Status 0 for a dropped connection); an answer it
// cannot read is an error wrapping ErrMalformed.
type backend interface {
	embed(ctx context.Context, texts []string) ([][]float32, error)
}

// New returns the embedder cfg chooses, calling it with key (empty for
// an endpoint that takes none; Gemini requires one, since its SDK would
// otherwise read GEMINI_API_KEY from the environment). The embedder holds
// no state between calls and is safe for concurrent use.
func New(cfg Config, key string) (memory.Embedder, error) {
	dims, sent, err := resolveDims(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.TaskType != "" && cfg.Provider != Gemini {
		return nil, fmt.Errorf("%w: %s takes no task type", ErrConfig, cfg.Provider)
	}
	e := &embedder{cfg: cfg, key: key, limits: batchLimits[cfg.Provider].cap(cfg.Batch)}
	e.id = memory.Identity{Name: string(cfg.Provider) + ":" + cfg.Model, Dims: dims, Model: modelDigest(cfg, dims),
		Tokenizer: string(cfg.Provider) + ":" + cfg.Model, Normalized: true}
	hc := cfg.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	switch cfg.Provider {
	case OpenAI:
		e.be = newOpenAI(cfg, key, sent, hc)
	case Gemini:
		e.be, err = newGemini(cfg, key, sent, hc)
	default:
		e.be = &ollamaBackend{url: cfg.URL, model: cfg.Model, dims: sent, key: key, hc: hc}
	}
	if err != nil {
		return nil, e.scrub(err)
	}
	return e, nil
}

// Identity describes the vectors: Model is the digest of modelDigest,
// Normalized is true because Embed normalises every vector itself
// (OpenAI documents unit vectors and Ollama's server normalises, but
// gemini-embedding-001 does so only at 3072 dimensions).
func (e *embedder) Identity() memory.Identity { return e.id }

// modelDigest is "sha256:" and the SHA-256 of the canonical JSON of what
// makes the vectors: provider, model, dimensions, task type and the
// normalisation. Never the URL or the key: the same model served
// elsewhere gives the same vectors.
func modelDigest(cfg Config, dims int) string {
	b, _ := json.Marshal(struct {
		V         int    `json:"v"`
		Provider  string `json:"provider"`
		Model     string `json:"model"`
		Dims      int    `json:"dims"`
		TaskType  string `json:"task_type"`
		Normalize string `json:"normalize"`
	}{1, string(cfg.Provider), cfg.Model, dims, cfg.TaskType, "l2"})
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}
