// Package ollama is the model client for Ollama's native chat API (POST
// {base}/api/chat), built on the official client
// (github.com/ollama/ollama/api). The base URL is the server's root:
// "http://127.0.0.1:11434" when Request.BaseURL is empty. A key, when
// set, goes in "Authorization: Bearer" (Ollama's cloud; a local server
// takes none).
//
// The official client marshals a ChatRequest itself and has no raw-body
// call, so the body is guaranteed by the transport under it: the client
// runs its own request, NDJSON reading and error handling, and the
// round tripper it is given sends the rendered bytes in place of the
// client's, with only the top-level "stream" member set (true by
// default, false with NoStream; Ollama streams unless told not to).
//
// An answer, streamed as NDJSON chunks or whole, is parsed in generation
// order: message.thinking becomes journal.Reasoning{Text},
// message.content journal.AssistantMessage (with done_reason), each of
// message.tool_calls a journal.ToolCall (arguments as the client decodes
// them, in the model's key order), then prompt_eval_count and eval_count
// as journal.Usage. Ollama's calls have no ID in older servers; a call
// without one gets a deterministic ID from the step and its index
// (CallID), which the next render sends back as tool_call_id.
package ollama

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/ollama/ollama/api"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
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

// CallID is the ID given to the index-th call (from 0) of a step when
// the server sent none: "call_" and 24 hex digits of the SHA-256 of the
// step and index, so it is stable, unique per journal, and valid under
// every API's call-ID syntax.
func CallID(step string, index int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", step, index))
	return "call_" + hex.EncodeToString(h[:12])
}

// Call sends req.Body to /api/chat and parses the generation, retrying
// as req.Retry allows.
func (c *Client) Call(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	body, err := SetStream(req.Body, !c.NoStream)
	if err != nil {
		return nil, fmt.Errorf("ollama: request body: %w", err)
	}
	base := req.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("ollama: base URL %q: %w", base, err)
	}
	rt := &exact{body: body, key: req.Key, next: c.transport()}
	hc := c.httpClient(rt)
	sdk := api.NewClient(u, hc)
	var resp *provider.Response
	n, err := provider.Do(ctx, req.Retry, nil, func(int) error {
		var err error
		resp, err = c.once(ctx, sdk, rt, req)
		return err
	})
	if err != nil {
		return nil, finish(ctx, err, n)
	}
	resp.Attempts = n
	return resp, nil
}

func (c *Client) transport() http.RoundTripper {
	if c.HTTP != nil && c.HTTP.Transport != nil {
		return c.HTTP.Transport
	}
	return http.DefaultTransport
}

// httpClient is c.HTTP with rt as its transport.
func (c *Client) httpClient(rt http.RoundTripper) *http.Client {
	hc := &http.Client{}
	if c.HTTP != nil {
		*hc = *c.HTTP
	}
	hc.Transport = rt
	return hc
}

// once makes one request and reads its answer.
func (c *Client) once(ctx context.Context, sdk *api.Client, rt *exact, req *provider.Request) (*provider.Response, error) {
	stream := !c.NoStream
	// The client marshals this request; exact sends req.Body instead.
	chat := &api.ChatRequest{Model: req.Model, Stream: &stream}
	var acc answer
	err := sdk.Chat(ctx, chat, func(r api.ChatResponse) error {
		acc.add(r, req.OnText)
		return nil
	})
	if err != nil {
		return nil, callError(err, rt.header())
	}
	if !acc.done {
		return nil, &provider.Error{Provider: "ollama", API: render.Ollama, Message: "answer ended before done", Err: errUnexpectedEnd}
	}
	return acc.response(req), nil
}

// exact is the round tripper that sends the rendered body and the key,
// and keeps the headers of the newest response (for Retry-After).
type exact struct {
	body []byte
	key  string
	next http.RoundTripper

	mu   sync.Mutex
	last http.Header
}

// RoundTrip sends r with the rendered body in place of the client's.
func (e *exact) RoundTrip(r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	if r.Body != nil {
		r.Body.Close()
	}
	out.Body = io.NopCloser(bytes.NewReader(e.body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(e.body)), nil }
	out.ContentLength = int64(len(e.body))
	if e.key != "" {
		out.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.next.RoundTrip(out)
	e.mu.Lock()
	e.last = nil
	if resp != nil {
		e.last = resp.Header
	}
	e.mu.Unlock()
	return resp, err
}

func (e *exact) header() http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}
