package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"google.golang.org/genai"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// GeminiURL is the Gemini API root used when Config.URL is empty.
const GeminiURL = "https://generativelanguage.googleapis.com"

// apiGemini is the provider.Error.API of the embeddings API's errors.
const apiGemini render.API = "gemini-embed"

// geminiBackend calls Models.EmbedContent of google.golang.org/genai,
// which sends the texts to {base}/v1beta/models/{model}:batchEmbedContents,
// with the key in x-goog-api-key.
type geminiBackend struct {
	client *genai.Client
	model  string
	config *genai.EmbedContentConfig
	key    string
}

// newGemini builds the SDK's client with an explicit key and base URL:
// given neither, genai reads GEMINI_API_KEY, GOOGLE_API_KEY and
// GOOGLE_GEMINI_BASE_URL from the environment.
func newGemini(cfg Config, key string, dims int, hc *http.Client) (*geminiBackend, error) {
	if key == "" {
		return nil, fmt.Errorf("%w: gemini %s: no API key", ErrConfig, cfg.Model)
	}
	base := cfg.URL
	if base == "" {
		base = GeminiURL
	}
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI,
		HTTPClient: catchHeaders(hc), HTTPOptions: genai.HTTPOptions{BaseURL: base}})
	if err != nil {
		return nil, fmt.Errorf("%w: gemini %s: %v", ErrConfig, cfg.Model, err)
	}
	conf := &genai.EmbedContentConfig{TaskType: cfg.TaskType}
	if dims > 0 {
		d := int32(dims)
		conf.OutputDimensionality = &d
	}
	return &geminiBackend{client: c, model: cfg.Model, config: conf, key: key}, nil
}

func (b *geminiBackend) embed(ctx context.Context, texts []string) ([][]float32, error) {
	contents := make([]*genai.Content, len(texts))
	for i, t := range texts {
		contents[i] = genai.NewContentFromText(t, genai.RoleUser)
	}
	var h http.Header
	res, err := b.client.Models.EmbedContent(context.WithValue(ctx, headersKey{}, &h), b.model, contents, b.config)
	if err != nil {
		return nil, b.error(ctx, err, h)
	}
	out := make([][]float32, len(res.Embeddings))
	for i, e := range res.Embeddings {
		if e == nil {
			return nil, malformed(Gemini, "embeddings[%d] is null", i)
		}
		out[i] = e.Values
	}
	return out, nil
}

// error turns what the SDK returned into a *provider.Error for an HTTP
// error (Gemini's status name as Type) or a request that got no answer,
// and into a malformed-answer error for an answer it could not decode.
func (b *geminiBackend) error(ctx context.Context, err error, h http.Header) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ae genai.APIError
	if errors.As(err, &ae) {
		return &provider.Error{Provider: string(Gemini), API: apiGemini, Status: ae.Code, Type: ae.Status, Message: redact(ae.Message, b.key),
			RetryAfter: provider.RetryAfter(h, time.Now())}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return provider.TransportError(string(Gemini), apiGemini, err)
	}
	return malformed(Gemini, "decode: %s", redact(firstLine(err.Error()), b.key))
}

// headersKey is the context key of the *http.Header that catchHeaders
// fills with the answer's headers: genai's APIError has no headers, and
// Retry-After is one.
type headersKey struct{}

// catchHeaders is hc with a transport that copies each answer's headers
// into the *http.Header its request's context holds under headersKey.
func catchHeaders(hc *http.Client) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = headerCatcher{base}
	return &c
}

type headerCatcher struct{ base http.RoundTripper }

func (h headerCatcher) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := h.base.RoundTrip(req)
	if dst, ok := req.Context().Value(headersKey{}).(*http.Header); ok && res != nil {
		*dst = res.Header.Clone()
	}
	return res, err
}

// firstLine is s up to its first newline: genai appends the whole body
// to a decoding error.
func firstLine(s string) string {
	for i := range len(s) {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
