package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// errFailed is the transport error of an answer that reported its own
// failure (an error event in a stream, a Responses status "failed"): the
// provider gave up mid-generation, so the call is retried like a dropped
// connection.
var errFailed = errors.New("openai: the provider reported the generation failed")

// parser collects the journal bodies of one answer, in generation order.
type parser struct {
	req    *provider.Request
	api    render.API
	events []provider.Output
	usage  *journal.Usage
	stop   string
	calls  int // tool calls seen

	// malformed is set by an answer the journal could not hold.
	malformed error
}

func (p *parser) add(kind journal.Kind, body any) {
	p.events = append(p.events, provider.Output{Kind: kind, Body: body})
}

// reasoning adds r unless it holds nothing the journal could keep.
func (p *parser) reasoning(r journal.Reasoning) {
	if r.Text == "" && r.Encrypted == "" && len(r.Summary) == 0 {
		return
	}
	r.Producer, r.Step = p.req.Producer, p.req.Step
	p.add(journal.KindReasoning, r)
}

func (p *parser) text(text, itemID, stop string) {
	p.add(journal.KindAssistant, journal.AssistantMessage{Text: text, Producer: p.req.Producer, Step: p.req.Step,
		StopReason: stop, ItemID: itemID})
}

// call adds a tool call; args is the arguments text the model sent. A
// call without an ID (some compatible servers send none) gets one made
// from the step and its position, so that its result pairs with it; a
// call without a name makes the answer malformed.
func (p *parser) call(callID, name, args, itemID string) {
	p.calls++
	if name == "" {
		p.malformed = fmt.Errorf("openai: %s answer: tool call %d has no name", p.api, p.calls)
		return
	}
	if callID == "" {
		callID = fmt.Sprintf("call_%s_%d", p.req.Step, p.calls)
	}
	tc := journal.ToolCall{CallID: callID, Name: name, Producer: p.req.Producer, Step: p.req.Step, ItemID: itemID}
	// The journal's own canonical form decides what is JSON: it also
	// refuses invalid UTF-8 and lone surrogates, which json.Valid passes.
	if _, err := journal.Canonicalize([]byte(args)); err == nil {
		tc.Arguments = json.RawMessage(args)
	} else {
		tc.RawArguments = args
	}
	p.add(journal.KindToolCall, tc)
}

func (p *parser) setUsage(in, out int64) {
	p.usage = &journal.Usage{Producer: p.req.Producer, InputTokens: in, OutputTokens: out}
}

// onText hands a text delta to the request's watcher.
func (p *parser) onText(s string) {
	if s != "" && p.req.OnText != nil {
		p.req.OnText(s)
	}
}

// response is the parsed generation, usage last.
func (p *parser) response() (*provider.Response, error) {
	if p.malformed != nil {
		return nil, p.malformed
	}
	if p.usage != nil {
		p.add(journal.KindUsage, *p.usage)
	}
	return &provider.Response{Events: p.events, StopReason: p.stop}, nil
}

// parseStream reads an SSE answer with the SDK's event decoder.
func (c *Client) parseStream(p *parser, res *http.Response) error {
	dec := ssestream.NewDecoder(res)
	defer dec.Close()
	var s streamer
	if c.API == render.OpenAIResponses {
		s = &responsesStream{p: p}
	} else {
		s = &chatStream{p: p}
	}
	for dec.Next() {
		done, err := s.event(dec.Event())
		if done && err == nil {
			provider.Drain(res.Body) // before dec.Close: the connection goes back to the pool
		}
		if err != nil || done {
			return err
		}
	}
	if err := dec.Err(); err != nil {
		return c.dropped(err)
	}
	return s.end(c)
}

// streamer consumes the events of one API's stream.
type streamer interface {
	// event takes one SSE event; done is true after the final one.
	event(ev ssestream.Event) (done bool, err error)
	// end is called when the stream closes without a final event.
	end(c *Client) error
}

// wireError is the error object OpenAI puts in error answers and events.
type wireError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// failed is the error of a generation the provider reported as failed.
func (p *parser) failed(e wireError) error {
	typ := e.Type
	if typ == "" && len(e.Code) > 0 && string(e.Code) != "null" {
		typ = string(e.Code)
		var s string
		if json.Unmarshal(e.Code, &s) == nil {
			typ = s
		}
	}
	msg := e.Message
	if msg == "" {
		msg = "no message"
	}
	return &provider.Error{Provider: providerName, API: p.api, Type: typ, Message: msg, Err: errFailed}
}
