package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// DefaultBaseURL is where the client sends requests whose BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// providerName is the provider.Error.Provider of every error this client
// returns, for OpenAI and for the compatible servers it talks to.
const providerName = "openai"

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// ErrAPI is returned by New and Call for an API this client does not speak.
var ErrAPI = errors.New("openai: API not served by this client")

// errTruncated is the transport error of a stream that ended before its
// final event: the connection dropped, and the call is retried.
var errTruncated = errors.New("openai: stream ended before its final event")

// Client calls Chat Completions or Responses. The zero value of HTTP uses
// http.DefaultClient; timeouts come from the context of each call only. A
// Client holds no state between calls and is safe for concurrent use.
type Client struct {
	// API is render.OpenAIChat or render.OpenAIResponses.
	API render.API
	// HTTP sends the requests; nil means http.DefaultClient.
	HTTP *http.Client
	// NoStream asks for the whole answer at once instead of a stream;
	// OnText then gets the whole text in one call.
	NoStream bool

	// sleep waits between attempts (nil: provider.Sleep); tests record
	// the waits through it.
	sleep func(context.Context, time.Duration) error
}

// New returns a client for api, which must be render.OpenAIChat or
// render.OpenAIResponses.
func New(api render.API, hc *http.Client) (*Client, error) {
	if api != render.OpenAIChat && api != render.OpenAIResponses {
		return nil, fmt.Errorf("%w: %q (want %s or %s)", ErrAPI, api, render.OpenAIChat, render.OpenAIResponses)
	}
	return &Client{API: api, HTTP: hc}, nil
}

// Call sends req.Body to the client's API and returns the whole
// generation. Errors the provider answered are *provider.Error (errors.Is
// finds provider.ErrRefused or provider.ErrUnavailable); a cancelled or
// expired ctx gives an error that wraps ctx.Err().
func (c *Client) Call(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	if err := c.check(req); err != nil {
		return nil, err
	}
	stream := !c.NoStream
	body, err := streamBody(req.Body, stream, c.API)
	if err != nil {
		return nil, err
	}
	var resp *provider.Response
	n, err := provider.Do(ctx, req.Retry, c.sleep, func(int) error {
		r, err := c.attempt(ctx, req, body, stream)
		resp = r
		return err
	})
	if err != nil {
		return nil, c.finalError(ctx, err, n)
	}
	resp.Attempts = n
	return resp, nil
}

// check refuses a request for another API or a client for one it does not serve.
func (c *Client) check(req *provider.Request) error {
	if c.API != render.OpenAIChat && c.API != render.OpenAIResponses {
		return fmt.Errorf("%w: %q", ErrAPI, c.API)
	}
	if req.API != "" && req.API != c.API {
		return fmt.Errorf("%w: request is %s, client is %s", ErrAPI, req.API, c.API)
	}
	return nil
}

// finalError adds the attempt count to a provider error, and names ctx's
// error when ctx ended the call.
func (c *Client) finalError(ctx context.Context, err error, attempts int) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("openai: %s: %w (after %v)", c.API, ctxErr, err)
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		pe.Attempts = attempts
	}
	return err
}

// attempt makes one HTTP request and parses its answer.
func (c *Client) attempt(ctx context.Context, req *provider.Request, body []byte, stream bool) (*provider.Response, error) {
	var res, last *http.Response
	opts := []option.RequestOption{option.WithResponseInto(&last)}
	if stream {
		opts = append(opts, option.WithHeader("Accept", "text/event-stream"))
	}
	// body is a []byte: the SDK sends it as is (requestconfig writes a
	// []byte params value straight into the request), so the provider
	// receives exactly the rendered bytes plus the stream switch.
	err := c.sdk(req).Post(ctx, c.path(), body, &res, opts...)
	if err != nil {
		return nil, c.sendError(ctx, req, err, last)
	}
	defer res.Body.Close()
	p := &parser{req: req, api: c.API}
	if stream && isEventStream(res) {
		err = c.parseStream(p, res)
	} else {
		err = c.parseWhole(p, res.Body)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("openai: %s: read answer: %w", c.API, ctx.Err())
		}
		return nil, err
	}
	provider.Drain(res.Body) // the connection goes back to the pool
	return p.response()
}

// sdk is the official client for one request. It is built from explicit
// options only (not oai.NewClient, which reads OPENAI_API_KEY and other
// variables from the environment): the base URL and key are the
// request's, and the SDK's retries are off because provider.Do retries.
func (c *Client) sdk(req *provider.Request) *oai.Client {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	base := req.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	opts := []option.RequestOption{option.WithHTTPClient(hc), option.WithBaseURL(base), option.WithMaxRetries(0)}
	if req.Key != "" {
		opts = append(opts, option.WithAPIKey(req.Key))
	}
	return &oai.Client{Options: opts}
}

// path is the API's path under the base URL.
func (c *Client) path() string {
	if c.API == render.OpenAIResponses {
		return "responses"
	}
	return "chat/completions"
}

func (c *Client) parseWhole(p *parser, r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return c.dropped(err)
	}
	if c.API == render.OpenAIResponses {
		return p.responsesWhole(b)
	}
	return p.chatWhole(b)
}

// dropped is the error of a connection that failed mid-answer: Status 0,
// retried by provider.Do.
func (c *Client) dropped(err error) error {
	return &provider.Error{Provider: providerName, API: c.API, Err: err}
}

// sendError turns what the SDK returned for a failed request into a
// *provider.Error: the provider's status, message, type and Retry-After
// for an HTTP error (last is the response, its body re-readable), Status
// 0 for a connection error, ctx's error when ctx ended the call.
func (c *Client) sendError(ctx context.Context, req *provider.Request, err error, last *http.Response) error {
	if ctx.Err() != nil {
		return fmt.Errorf("openai: %s: %w", c.API, ctx.Err())
	}
	if last == nil || last.StatusCode < 400 {
		return c.dropped(err)
	}
	pe := &provider.Error{Provider: providerName, API: c.API, Status: last.StatusCode,
		RetryAfter: provider.RetryAfter(last.Header, time.Now())}
	if last.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(last.Body, maxErrorBody))
		last.Body.Close()
		pe.Type, pe.Message = errorBody(b)
	}
	if req.Key != "" {
		pe.Message = strings.ReplaceAll(pe.Message, req.Key, "[key]")
	}
	return pe
}

// errorBody reads the provider's error type and message from an error
// answer: OpenAI's {"error":{"message","type","code"}}, the
// {"error":"text"} or {"message":...} of some compatible servers, else
// the text itself, shortened.
func errorBody(b []byte) (typ, msg string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(b, &v) == nil {
		var e struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &e) == nil && e.Message != "":
			typ = e.Type
			if typ == "" {
				typ = strings.Trim(string(e.Code), `"`)
			}
			return typ, e.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return "", s
		case v.Message != "":
			return "", v.Message
		}
	}
	msg = strings.TrimSpace(string(b))
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	return "", msg
}

// isEventStream reports whether an answer is SSE (a server may ignore
// the stream switch and answer whole).
func isEventStream(res *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// streamBody returns body with the streaming switch set: "stream":true
// (and, for Chat, "stream_options":{"include_usage":true}) added as the
// last members of its outer object, every other byte unchanged. Unstreamed
// it returns body itself. A body that already names "stream" at the top
// level is sent as is.
func streamBody(body []byte, stream bool, api render.API) ([]byte, error) {
	if !stream {
		return body, nil
	}
	end := len(bytes.TrimRight(body, " \t\r\n"))
	start := len(body) - len(bytes.TrimLeft(body, " \t\r\n"))
	if end-start < 2 || body[start] != '{' || body[end-1] != '}' {
		return nil, fmt.Errorf("openai: %s: request body is not a JSON object", api)
	}
	if hasTopLevel(body, "stream") {
		return body, nil
	}
	add := `"stream":true`
	if api == render.OpenAIChat {
		add += `,"stream_options":{"include_usage":true}`
	}
	if len(bytes.TrimSpace(body[start+1:end-1])) > 0 {
		add = "," + add
	}
	out := make([]byte, 0, len(body)+len(add))
	out = append(out, body[:end-1]...)
	out = append(out, add...)
	return append(out, body[end-1:]...), nil
}

// hasTopLevel reports whether the JSON object b has a member named key;
// it decodes b only when the key's quoted name occurs in it at all.
func hasTopLevel(b []byte, key string) bool {
	if !bytes.Contains(b, []byte(`"`+key+`"`)) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}
