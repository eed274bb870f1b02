package ollama

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ollama/ollama/api"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// answer accumulates the chunks of one answer.
type answer struct {
	thinking, text strings.Builder
	calls          []api.ToolCall
	done           bool
	reason         string
	in, out        int
}

// read reads an answer: NDJSON lines, one chunk each (a whole answer is
// one line). A line with an "error" member ends it with that message.
func (a *answer) read(r io.Reader, onText func(string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ch struct {
			api.ChatResponse
			Error string `json:"error"`
		}
		if err := json.Unmarshal(line, &ch); err != nil {
			return &provider.Error{Provider: "ollama", API: render.Ollama, Err: fmt.Errorf("ollama: malformed answer line: %w", err)}
		}
		if ch.Error != "" {
			return &provider.Error{Provider: "ollama", API: render.Ollama, Message: ch.Error, Err: errInStream}
		}
		a.add(ch.ChatResponse, onText)
	}
	if err := sc.Err(); err != nil {
		return &provider.Error{Provider: "ollama", API: render.Ollama, Err: err}
	}
	if !a.done {
		return &provider.Error{Provider: "ollama", API: render.Ollama, Err: errUnexpectedEnd}
	}
	return nil
}

// add takes one chunk (a whole answer is one chunk with done set).
func (a *answer) add(r api.ChatResponse, onText func(string)) {
	a.thinking.WriteString(r.Message.Thinking)
	a.text.WriteString(r.Message.Content)
	if r.Message.Content != "" && onText != nil {
		onText(r.Message.Content)
	}
	a.calls = append(a.calls, r.Message.ToolCalls...)
	if r.Done {
		a.done, a.reason = true, r.DoneReason
		a.in, a.out = r.PromptEvalCount, r.EvalCount
	}
}

// response is the answer as journal bodies: thinking, text, calls, usage.
func (a *answer) response(req *provider.Request) *provider.Response {
	p, step := req.Producer, req.Step
	resp := &provider.Response{StopReason: a.reason}
	add := func(k journal.Kind, b any) { resp.Events = append(resp.Events, provider.Output{Kind: k, Body: b}) }
	if a.thinking.Len() > 0 {
		add(journal.KindReasoning, journal.Reasoning{Producer: p, Step: step, Text: a.thinking.String()})
	}
	if a.text.Len() > 0 || len(a.calls) == 0 {
		add(journal.KindAssistant, journal.AssistantMessage{Producer: p, Step: step, Text: a.text.String(), StopReason: a.reason})
	}
	for i, c := range a.calls {
		id := c.ID
		if id == "" {
			id = CallID(step, i)
		}
		call := journal.ToolCall{CallID: id, Name: c.Function.Name, Producer: p, Step: step}
		if args, err := json.Marshal(c.Function.Arguments); err == nil {
			call.Arguments = args
		}
		add(journal.KindToolCall, call)
	}
	add(journal.KindUsage, journal.Usage{Producer: p, InputTokens: int64(a.in), OutputTokens: int64(a.out)})
	return resp
}
