package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"google.golang.org/genai"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// chunk is a GenerateContentResponse, or one chunk of a stream, as far
// as the journal needs it.
type chunk struct {
	Candidates    []*candidate                                `json:"candidates"`
	UsageMetadata *genai.GenerateContentResponseUsageMetadata `json:"usageMetadata"`
	Error         *genai.APIError                             `json:"error"`
}

type candidate struct {
	Content      *content           `json:"content"`
	FinishReason genai.FinishReason `json:"finishReason"`
}

type content struct {
	Parts []*part `json:"parts"`
}

// part is a genai.Part whose thoughtSignature and functionCall are kept
// as sent: the outer fields hide the embedded ones in JSON.
type part struct {
	genai.Part
	ThoughtSignature string        `json:"thoughtSignature,omitempty"`
	FunctionCall     *functionCall `json:"functionCall,omitempty"`
}

// functionCall is a genai.FunctionCall with its arguments as the JSON
// the model sent.
type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// item is one journal body being accumulated.
type item struct {
	kind journal.Kind
	text strings.Builder
	sig  string
	call *functionCall
}

// answer accumulates the parts of candidates[0].
type answer struct {
	items    []*item
	reason   string
	usage    *genai.GenerateContentResponseUsageMetadata
	finished bool
}

// whole reads a generateContent answer, handing its text to onText.
func (a *answer) whole(r io.Reader, onText func(string)) error {
	var ch chunk
	if err := json.NewDecoder(r).Decode(&ch); err != nil {
		return &provider.Error{Provider: "google", API: render.Gemini, Err: fmt.Errorf("gemini: malformed answer: %w", err)}
	}
	if err := a.add(&ch, onText); err != nil {
		return err
	}
	a.finished = true
	return nil
}

// stream reads an SSE stream of chunks; one ending before a chunk with
// a finish reason is a dropped connection.
func (a *answer) stream(r io.Reader, onText func(string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data.Write(bytes.TrimPrefix(d, []byte(" ")))
			continue
		}
		if len(line) == 0 && data.Len() > 0 {
			if err := a.event(data.Bytes(), onText); err != nil {
				return err
			}
			data.Reset()
		}
	}
	if err := sc.Err(); err != nil {
		return &provider.Error{Provider: "google", API: render.Gemini, Err: err}
	}
	if data.Len() > 0 {
		if err := a.event(data.Bytes(), onText); err != nil {
			return err
		}
	}
	if !a.finished {
		return &provider.Error{Provider: "google", API: render.Gemini, Err: errUnexpectedEnd}
	}
	return nil
}

func (a *answer) event(data []byte, onText func(string)) error {
	var ch chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return &provider.Error{Provider: "google", API: render.Gemini, Err: fmt.Errorf("gemini: malformed stream chunk: %w", err)}
	}
	return a.add(&ch, onText)
}

// add takes one chunk: an error chunk ends the answer with its status.
func (a *answer) add(ch *chunk, onText func(string)) error {
	if ch.Error != nil {
		return &provider.Error{Provider: "google", API: render.Gemini, Status: ch.Error.Code, Type: ch.Error.Status, Message: ch.Error.Message}
	}
	if ch.UsageMetadata != nil {
		a.usage = ch.UsageMetadata
	}
	if len(ch.Candidates) == 0 || ch.Candidates[0] == nil {
		return nil
	}
	c := ch.Candidates[0]
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			a.part(p, onText)
		}
	}
	if c.FinishReason != "" {
		a.reason, a.finished = string(c.FinishReason), true
	}
	return nil
}

// part adds one part. Pieces of text (or thought) join the item before
// them unless both carry a signature: a stream splits one part into
// chunks, and the API may sign an empty final text part.
func (a *answer) part(p *part, onText func(string)) {
	if p == nil {
		return
	}
	if p.FunctionCall != nil {
		a.items = append(a.items, &item{kind: journal.KindToolCall, sig: p.ThoughtSignature, call: p.FunctionCall})
		return
	}
	if p.FunctionResponse != nil || p.InlineData != nil || p.FileData != nil || p.ExecutableCode != nil || p.CodeExecutionResult != nil {
		return
	}
	if p.Text == "" && p.ThoughtSignature == "" {
		return // the empty part a stream ends with carries nothing
	}
	kind := journal.KindAssistant
	if p.Thought {
		kind = journal.KindReasoning
	} else if p.Text != "" && onText != nil {
		onText(p.Text)
	}
	n := len(a.items)
	if n == 0 || a.items[n-1].kind != kind || (a.items[n-1].sig != "" && p.ThoughtSignature != "") {
		a.items = append(a.items, &item{kind: kind})
		n++
	}
	it := a.items[n-1]
	it.text.WriteString(p.Text)
	if p.ThoughtSignature != "" {
		it.sig = p.ThoughtSignature
	}
}

// response is the answer as journal bodies, with the usage last.
func (a *answer) response(req *provider.Request) *provider.Response {
	pr, step := req.Producer, req.Step
	resp := &provider.Response{StopReason: a.reason}
	last, calls := -1, 0
	for _, it := range a.items {
		var body any
		switch it.kind {
		case journal.KindReasoning:
			body = journal.Reasoning{Producer: pr, Step: step, Text: it.text.String(), Signature: it.sig}
		case journal.KindAssistant:
			last = len(resp.Events)
			body = journal.AssistantMessage{Producer: pr, Step: step, Text: it.text.String(), Signature: it.sig}
		case journal.KindToolCall:
			body = toolCall(it, pr, step, calls)
			calls++
		}
		resp.Events = append(resp.Events, provider.Output{Kind: it.kind, Body: body})
	}
	if last >= 0 {
		m := resp.Events[last].Body.(journal.AssistantMessage)
		m.StopReason = a.reason
		resp.Events[last].Body = m
	}
	if u := a.usage; u != nil {
		resp.Events = append(resp.Events, provider.Output{Kind: journal.KindUsage, Body: journal.Usage{Producer: pr,
			InputTokens: int64(u.PromptTokenCount), OutputTokens: int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount)}})
	}
	return resp
}

// toolCall is the journal body of the index-th call of a step.
func toolCall(it *item, pr journal.Producer, step string, index int) journal.ToolCall {
	fc := it.call
	c := journal.ToolCall{CallID: fc.ID, Name: fc.Name, Producer: pr, Step: step, Signature: it.sig}
	if c.CallID == "" {
		c.CallID = CallID(step, index)
	}
	if len(fc.Args) > 0 && string(fc.Args) != "null" {
		c.Arguments = fc.Args
	}
	return c
}
