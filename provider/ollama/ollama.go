// Package ollama is the model client for Ollama's native chat API (POST
// {base}/api/chat), read with the official client's types
// (github.com/ollama/ollama/api). The base URL is the server's root:
// "http://127.0.0.1:11434" when Request.BaseURL is empty. A key, when
// set, goes in "Authorization: Bearer" (Ollama's cloud; a local server
// takes none).
//
// The request is made with net/http, not with api.Client: the client
// marshals a ChatRequest itself and has no call that sends a body as
// given; for ollama.com, or with OLLAMA_AUTH set, it signs each request
// with the private key it reads from ~/.ollama, a secret this package
// must not read; and it ends a stream whose connection drops without an
// error. So the rendered bytes are the body, with only the top-level
// "stream" member set (true by default, false with NoStream; Ollama
// streams unless told not to), and the answer is decoded into
// api.ChatResponse line by line.
//
// An answer, streamed as NDJSON chunks or whole, is parsed in generation
// order: message.thinking becomes journal.Reasoning{Text},
// message.content journal.AssistantMessage (with done_reason), each of
// message.tool_calls a journal.ToolCall (arguments as api decodes them,
// in the model's key order), then prompt_eval_count and eval_count as
// journal.Usage. Ollama's calls have no ID in older servers; a call
// without one gets a deterministic ID from the step and its index
// (CallID), which the next render sends back as tool_call_id. An answer
// that ends before its done line is a dropped connection.
// Request.OnText gets the text as it streams, or once per text of a
// whole answer (NoStream).
package ollama

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentcapsule/capsule/provider"
)

// DefaultBaseURL is the local server, used when Request.BaseURL is empty.
const DefaultBaseURL = "http://127.0.0.1:11434"

// Client calls Ollama's chat API. The zero value streams over
// http.DefaultClient.
type Client struct {
	// HTTP is the client requests go through; nil means http.DefaultClient.
	HTTP *http.Client
	// NoStream asks for the whole answer in one response instead of a
	// stream.
	NoStream bool
}

// New returns a client that sends its requests through hc.
func New(hc *http.Client) *Client { return &Client{HTTP: hc} }

// CallID is provider.CallID: the ID of a call the model sent without one.
func CallID(step string, index int) string { return provider.CallID(step, index) }

// Call sends req.Body to /api/chat and parses the generation, retrying
// as req.Retry allows.
func (c *Client) Call(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	body, err := SetStream(req.Body, !c.NoStream)
	if err != nil {
		return nil, fmt.Errorf("ollama: request body: %w", err)
	}
	var resp *provider.Response
	n, err := provider.Do(ctx, req.Retry, nil, func(int) error {
		var err error
		resp, err = c.once(ctx, req, body)
		return err
	})
	if err != nil {
		return nil, finish(ctx, err, n)
	}
	resp.Attempts = n
	return resp, nil
}

// URL is the chat endpoint under base.
func URL(base string) string {
	if base == "" {
		base = DefaultBaseURL
	}
	return strings.TrimSuffix(base, "/") + "/api/chat"
}

// once makes one request and reads its answer.
func (c *Client) once(ctx context.Context, req *provider.Request, body []byte) (*provider.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, URL(req.BaseURL), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("ollama: request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/x-ndjson")
	if req.Key != "" {
		hr.Header.Set("Authorization", "Bearer "+req.Key)
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
	if err := acc.read(res.Body, req.OnText); err != nil {
		return nil, err
	}
	provider.Drain(res.Body) // the connection goes back to the pool
	return acc.response(req), nil
}
