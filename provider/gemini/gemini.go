// Package gemini is the model client for the Gemini API's
// generateContent (POST {base}/v1beta/models/{model}:generateContent)
// and its stream (:streamGenerateContent?alt=sse). The base URL is the
// API's root without a version: "https://generativelanguage.googleapis.com"
// when Request.BaseURL is empty, or e.g. the simulator's root URL. The key
// goes in x-goog-api-key, never in the URL.
//
// The official SDK (google.golang.org/genai) builds every request body
// itself from its own types and has no call that sends a body as given,
// so the request is made here with net/http: the rendered bytes are the
// body, unchanged (Gemini keeps the stream switch in the path, not the
// body). The answer is read with genai's types (Part, FinishReason, the
// usage metadata, APIError), except two fields taken as sent: a part's
// thoughtSignature stays the base64 text the API gave (genai decodes it
// to bytes and would re-encode it), and functionCall.args stays the JSON
// the model sent, in its key order.
//
// The parts of candidates[0], streamed or whole, are parsed in order:
// thought parts become journal.Reasoning{Text, Signature}, text parts
// journal.AssistantMessage{Text, Signature} (consecutive pieces joined;
// the finish reason on the last), each functionCall a
// journal.ToolCall{CallID, Name, Arguments, Signature}, then the usage
// (promptTokenCount in; candidates and thoughts tokens out). A call
// without an id gets a deterministic one from the step and its index
// (CallID); render/gemini sends the model's own call IDs back on the call
// and its functionResponse, so the result pairs on the next render.
// Request.OnText gets the text as it streams, or once per text of a
// whole answer (NoStream).
package gemini

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentcapsule/capsule/provider"
)

// DefaultBaseURL is the public endpoint, used when Request.BaseURL is empty.
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// Client calls generateContent. The zero value streams over
// http.DefaultClient.
type Client struct {
	// HTTP is the client requests go through; nil means http.DefaultClient.
	HTTP *http.Client
	// NoStream asks for the whole answer in one response
	// (generateContent) instead of a stream.
	NoStream bool
}

// New returns a client that sends its requests through hc.
func New(hc *http.Client) *Client { return &Client{HTTP: hc} }

// CallID is provider.CallID: the ID of a call the model sent without one.
func CallID(step string, index int) string { return provider.CallID(step, index) }

// Call sends req.Body to the model's generateContent (or its stream) and
// parses the generation, retrying as req.Retry allows.
func (c *Client) Call(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	var resp *provider.Response
	n, err := provider.Do(ctx, req.Retry, nil, func(int) error {
		var err error
		resp, err = c.once(ctx, req)
		return err
	})
	if err != nil {
		return nil, finish(ctx, err, n)
	}
	resp.Attempts = n
	return resp, nil
}

// URL is where a request for model goes: the method's path under base,
// with alt=sse for a stream.
func URL(base, model string, stream bool) string {
	if base == "" {
		base = DefaultBaseURL
	}
	u := strings.TrimSuffix(base, "/") + "/v1beta/models/" + strings.TrimPrefix(model, "models/")
	if stream {
		return u + ":streamGenerateContent?alt=sse"
	}
	return u + ":generateContent"
}

// once makes one request and reads its answer.
func (c *Client) once(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, URL(req.BaseURL, req.Model, !c.NoStream), bytes.NewReader(req.Body))
	if err != nil {
		return nil, fmt.Errorf("gemini: request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if req.Key != "" {
		hr.Header.Set("x-goog-api-key", req.Key)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(hr)
	if err != nil {
		return nil, transportError(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, statusError(res)
	}
	var acc answer
	if c.NoStream {
		err = acc.whole(res.Body, req.OnText)
	} else {
		err = acc.stream(res.Body, req.OnText)
	}
	if err != nil {
		return nil, err
	}
	provider.Drain(res.Body) // the connection goes back to the pool
	return acc.response(req), nil
}
