package remote

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// OpenAIURL is the OpenAI base URL used when Config.URL is empty.
const OpenAIURL = "https://api.openai.com/v1"

// apiOpenAI is the provider.Error.API of the embeddings API's errors.
const apiOpenAI render.API = "openai-embeddings"

// openaiBackend calls POST {base}/embeddings through openai-go, asking for
// base64 vectors (float32 little-endian: half the bytes of JSON numbers,
// the encoding OpenAI's own SDKs ask for).
type openaiBackend struct {
	svc   oai.EmbeddingService
	model string
	dims  int
	key   string
}

// newOpenAI builds the SDK's embeddings service from explicit options
// only (not oai.NewClient, which reads OPENAI_API_KEY and OPENAI_BASE_URL
// from the environment); its retries are off: Embed retries.
func newOpenAI(cfg Config, key string, dims int, hc *http.Client) *openaiBackend {
	base := cfg.URL
	if base == "" {
		base = OpenAIURL
	}
	opts := []option.RequestOption{option.WithHTTPClient(hc), option.WithBaseURL(base), option.WithMaxRetries(0)}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	return &openaiBackend{svc: oai.NewEmbeddingService(opts...), model: cfg.Model, dims: dims, key: key}
}

func (b *openaiBackend) embed(ctx context.Context, texts []string) ([][]float32, error) {
	params := oai.EmbeddingNewParams{Model: b.model, Input: oai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: oai.EmbeddingNewParamsEncodingFormatBase64}
	if b.dims > 0 {
		params.Dimensions = oai.Int(int64(b.dims))
	}
	var raw []byte
	if _, err := b.svc.New(ctx, params, option.WithResponseBodyInto(&raw)); err != nil {
		return nil, b.error(ctx, err)
	}
	return openaiVectors(raw, len(texts))
}

// error turns what the SDK returned into a *provider.Error: the status,
// OpenAI's code or type, its message without the key, and Retry-After.
func (b *openaiBackend) error(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ae *oai.Error
	if !errors.As(err, &ae) {
		return provider.TransportError(string(OpenAI), apiOpenAI, err)
	}
	pe := &provider.Error{Provider: string(OpenAI), API: apiOpenAI, Status: ae.StatusCode, Type: ae.Code, Message: redact(ae.Message, b.key)}
	if pe.Type == "" {
		pe.Type = ae.Type
	}
	if ae.Response != nil {
		pe.RetryAfter = provider.RetryAfter(ae.Response.Header, time.Now())
	}
	return pe
}

// openaiVectors reads an answer's data, placing each vector at its index.
func openaiVectors(raw []byte, n int) ([][]float32, error) {
	var ans struct {
		Data []struct {
			Index     *int            `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, malformed(OpenAI, "decode: %v", err)
	}
	if len(ans.Data) != n {
		return nil, malformed(OpenAI, "%d vectors for %d texts", len(ans.Data), n)
	}
	out := make([][]float32, n)
	for k, d := range ans.Data {
		if d.Index == nil || *d.Index < 0 || *d.Index >= n || out[*d.Index] != nil {
			return nil, malformed(OpenAI, "data[%d] has a missing, out-of-range or repeated index", k)
		}
		v, err := openaiVector(d.Embedding)
		if err != nil {
			return nil, malformed(OpenAI, "data[%d].embedding: %v", k, err)
		}
		out[*d.Index] = v
	}
	return out, nil
}

// openaiVector reads one embedding: base64 float32 little-endian, or a
// JSON array of numbers (a server that ignores encoding_format).
func openaiVector(raw json.RawMessage) ([]float32, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		if len(b)%4 != 0 {
			return nil, errors.New("base64 vector is not a whole number of float32 values")
		}
		v := make([]float32, len(b)/4)
		return v, binary.Read(bytes.NewReader(b), binary.LittleEndian, v)
	}
	var f []float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	v := make([]float32, len(f))
	for i, x := range f {
		v[i] = float32(x)
	}
	return v, nil
}
