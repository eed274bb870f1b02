// Package anthropic is the model client for Anthropic's Messages API
// (POST {base}/v1/messages), built on the official SDK
// (github.com/anthropics/anthropic-sdk-go). The base URL is the API's
// root without /v1: "https://api.anthropic.com" when Request.BaseURL is
// empty, or e.g. the simulator's root URL. The key goes in x-api-key and
// the SDK sets anthropic-version; the SDK reads no environment variable
// (option.WithoutEnvironmentDefaults) and makes no retries of its own:
// provider.Do does.
//
// The body is sent as rendered: it goes to the SDK's raw request
// facility (Client.Post with option.WithRequestBody) and no params are
// marshalled; for a stream, option.WithJSONSet adds "stream":true at the
// end of the object and changes nothing else.
//
// An answer, streamed (SSE: message_start, content_block_start/delta/stop
// with text_delta, thinking_delta, signature_delta and input_json_delta,
// message_delta with stop_reason and usage, message_stop) or whole, is
// accumulated into the SDK's Message (each tool input as the model sent
// it, valid JSON or not) and parsed block by block in order:
// thinking becomes journal.Reasoning{Text, Signature}, redacted_thinking
// journal.Reasoning{Encrypted, Redacted}, text journal.AssistantMessage,
// tool_use journal.ToolCall{CallID, Name, Arguments, or RawArguments when
// the input is not valid JSON}, then the usage. The stop reason goes on
// the last text and in Response.StopReason as Anthropic spells it.
// Request.OnText gets the text as it streams, or once per text of a
// whole answer (NoStream).
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// DefaultBaseURL is the public endpoint, used when Request.BaseURL is empty.
const DefaultBaseURL = "https://api.anthropic.com"

// path is the Messages endpoint under the base URL.
const path = "v1/messages"

// Client calls the Messages API. The zero value streams over
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

// Call sends req.Body to the Messages API and parses the generation,
// retrying as req.Retry allows.
func (c *Client) Call(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	sdk := anthropic.NewClient(c.options(req)...)
	var resp *provider.Response
	n, err := provider.Do(ctx, req.Retry, nil, func(int) error {
		var err error
		resp, err = c.once(ctx, &sdk, req)
		return err
	})
	if err != nil {
		return nil, finish(ctx, err, n)
	}
	resp.Attempts = n
	return resp, nil
}

// options configures the SDK for one call: no environment, no retries,
// the caller's HTTP client, base URL and key.
func (c *Client) options(req *provider.Request) []option.RequestOption {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	base := req.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithHTTPClient(hc),
		option.WithBaseURL(base), option.WithMaxRetries(0)}
	if req.Key != "" {
		opts = append(opts, option.WithAPIKey(req.Key))
	}
	return opts
}

// once makes one request.
func (c *Client) once(ctx context.Context, sdk *anthropic.Client, req *provider.Request) (*provider.Response, error) {
	body := option.WithRequestBody("application/json", req.Body)
	if c.NoStream {
		var msg anthropic.Message
		if err := sdk.Post(ctx, path, nil, &msg, body); err != nil {
			return nil, callError(err)
		}
		if req.OnText != nil {
			for _, b := range msg.Content {
				if b.Type == "text" {
					req.OnText(b.Text)
				}
			}
		}
		return parse(&msg, req), nil
	}
	var raw *http.Response
	err := sdk.Post(ctx, path, nil, &raw, body, option.WithJSONSet("stream", true))
	st := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(raw), err)
	defer st.Close()
	msg, err := accumulate(st, req.OnText)
	if err != nil {
		return nil, err
	}
	return parse(msg, req), nil
}

// accumulate reads a stream into one Message, handing text deltas to
// onText. A stream that ends before message_stop is a dropped connection.
// The input of each tool_use is the concatenation of its input_json_delta
// pieces as sent: the SDK's accumulator rebuilds a block from its JSON,
// which loses input that is not valid JSON.
func accumulate(st *ssestream.Stream[anthropic.MessageStreamEventUnion], onText func(string)) (*anthropic.Message, error) {
	var msg anthropic.Message
	inputs := map[int64][]byte{}
	stopped := false
	for st.Next() {
		ev := st.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, &provider.Error{Provider: "anthropic", API: render.Anthropic, Err: fmt.Errorf("anthropic: malformed stream: %w", err)}
		}
		switch {
		case ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && onText != nil:
			onText(ev.Delta.Text)
		case ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta":
			inputs[ev.Index] = append(inputs[ev.Index], ev.Delta.PartialJSON...)
		case ev.Type == "message_stop":
			stopped = true
		}
	}
	if err := st.Err(); err != nil {
		return nil, callError(err)
	}
	if !stopped {
		return nil, &provider.Error{Provider: "anthropic", API: render.Anthropic, Err: errUnexpectedEnd}
	}
	for i, in := range inputs {
		if i >= 0 && i < int64(len(msg.Content)) && len(in) > 0 {
			msg.Content[i].Input = in
		}
	}
	return &msg, nil
}

// errUnexpectedEnd is the transport error of a stream cut short.
var errUnexpectedEnd = errors.New("anthropic: stream ended before message_stop")
