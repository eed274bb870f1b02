package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// OllamaURL is the Ollama server used when Config.URL is empty.
const OllamaURL = "http://127.0.0.1:11434"

// apiOllama is the provider.Error.API of the embed API's errors.
const apiOllama render.API = "ollama-embed"

// maxAnswer bounds an answer's size (128 texts × 4096 dims as JSON fit).
const maxAnswer = 64 << 20

// ollamaBackend calls POST {base}/api/embed with api.EmbedRequest and
// reads api.EmbedResponse; a key, when set, goes in "Authorization:
// Bearer" (Ollama's cloud; a local server takes none).
type ollamaBackend struct {
	url, model, key string
	dims            int
	hc              *http.Client
}

func (b *ollamaBackend) embed(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(api.EmbedRequest{Model: b.model, Input: texts, Dimensions: b.dims})
	if err != nil {
		return nil, fmt.Errorf("ollama: encode request: %w", err)
	}
	base := b.url
	if base == "" {
		base = OllamaURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/api/embed", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("ollama: request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if b.key != "" {
		req.Header.Set("Authorization", "Bearer "+b.key)
	}
	res, err := b.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, provider.TransportError(string(Ollama), apiOllama, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return nil, provider.TransportError(string(Ollama), apiOllama, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, b.statusError(res, raw)
	}
	var ans api.EmbedResponse
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, malformed(Ollama, "decode: %v", err)
	}
	return ans.Embeddings, nil
}

// statusError is the *provider.Error of an answer other than 200: the
// status, Ollama's "error" text without the key, and Retry-After.
func (b *ollamaBackend) statusError(res *http.Response, raw []byte) error {
	pe := &provider.Error{Provider: string(Ollama), API: apiOllama, Status: res.StatusCode,
		RetryAfter: provider.RetryAfter(res.Header, time.Now())}
	var se api.StatusError
	if json.Unmarshal(raw, &se) == nil {
		pe.Message = redact(se.ErrorMessage, b.key)
	}
	return pe
}
