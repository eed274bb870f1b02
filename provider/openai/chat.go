package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentcapsule/capsule/journal"
)

// The Chat Completions answer, as far as the journal needs it. These are
// wire structs rather than the SDK's response types because the journal
// needs fields the SDK types do not name (reasoning_content of
// DeepSeek-style servers) and the arguments text exactly as sent.
type (
	chatCompletion struct {
		Choices []chatChoice `json:"choices"`
		Usage   *chatUsage   `json:"usage"`
		Error   *wireError   `json:"error"`
	}
	chatChoice struct {
		Index        int         `json:"index"`
		Message      chatMessage `json:"message"`
		Delta        chatMessage `json:"delta"`
		FinishReason string      `json:"finish_reason"`
	}
	chatMessage struct {
		Content          *string        `json:"content"`
		Refusal          *string        `json:"refusal"`
		ReasoningContent *string        `json:"reasoning_content"`
		Reasoning        *string        `json:"reasoning"`
		ToolCalls        []chatToolCall `json:"tool_calls"`
	}
	chatToolCall struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	chatUsage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	}
)

// chatAnswer accumulates one choice of a Chat answer, whole or streamed.
type chatAnswer struct {
	text, refusal, reasoning strings.Builder
	calls                    []*chatCall
	finish                   string
}

type chatCall struct {
	index    int
	id, name string
	args     strings.Builder
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// add takes a message or a streamed delta of it.
func (a *chatAnswer) add(m chatMessage) {
	a.text.WriteString(str(m.Content))
	a.refusal.WriteString(str(m.Refusal))
	if m.ReasoningContent != nil {
		a.reasoning.WriteString(*m.ReasoningContent)
	} else {
		a.reasoning.WriteString(str(m.Reasoning))
	}
	for i, tc := range m.ToolCalls {
		c := a.callFor(tc, i)
		if tc.ID != "" {
			c.id = tc.ID
		}
		c.name += tc.Function.Name
		c.args.WriteString(tc.Function.Arguments)
	}
}

// callFor finds the call a tool call delta continues: the one of its
// index, or, from a server that sends no index, the last one unless the
// delta names a new ID. pos is the delta's position in its message.
func (a *chatAnswer) callFor(tc chatToolCall, pos int) *chatCall {
	if tc.Index != nil {
		for _, c := range a.calls {
			if c.index == *tc.Index {
				return c
			}
		}
		c := &chatCall{index: *tc.Index}
		a.calls = append(a.calls, c)
		return c
	}
	if n := len(a.calls); n > 0 && (tc.ID == "" || tc.ID == a.calls[n-1].id) && pos == 0 {
		return a.calls[n-1]
	}
	c := &chatCall{index: len(a.calls)}
	a.calls = append(a.calls, c)
	return c
}

// emit adds the answer's journal bodies: reasoning, text, calls in index order.
func (a *chatAnswer) emit(p *parser) {
	p.stop = a.finish
	p.reasoning(journal.Reasoning{Text: a.reasoning.String()})
	text := a.text.String()
	if text == "" {
		text = a.refusal.String()
	}
	if text != "" || len(a.calls) == 0 {
		p.text(text, "", a.finish)
	}
	sort.SliceStable(a.calls, func(i, j int) bool { return a.calls[i].index < a.calls[j].index })
	for _, c := range a.calls {
		p.call(c.id, c.name, c.args.String(), "")
	}
}

func (p *parser) chatWhole(b []byte) error {
	var v chatCompletion
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("openai: chat answer: %w", err)
	}
	if v.Error != nil {
		return p.failed(*v.Error)
	}
	if len(v.Choices) == 0 {
		return fmt.Errorf("openai: chat answer has no choices")
	}
	var a chatAnswer
	a.add(v.Choices[0].Message)
	a.finish = v.Choices[0].FinishReason
	p.onText(a.text.String())
	a.emit(p)
	if v.Usage != nil {
		p.setUsage(v.Usage.PromptTokens, v.Usage.CompletionTokens)
	}
	return nil
}

// chatStream joins the chunks of a streamed Chat answer (choice 0).
type chatStream struct {
	p        *parser
	a        chatAnswer
	finished bool
}

func (s *chatStream) event(ev ssestream.Event) (bool, error) {
	data := bytes.TrimSpace(ev.Data)
	if bytes.Equal(data, []byte("[DONE]")) {
		s.a.emit(s.p)
		return true, nil
	}
	var ch chatCompletion
	if err := json.Unmarshal(data, &ch); err != nil {
		return false, fmt.Errorf("openai: chat stream chunk: %w", err)
	}
	if ch.Error != nil {
		return false, s.p.failed(*ch.Error)
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		s.p.onText(str(c.Delta.Content))
		s.a.add(c.Delta)
		if c.FinishReason != "" {
			s.a.finish, s.finished = c.FinishReason, true
		}
	}
	if ch.Usage != nil {
		s.p.setUsage(ch.Usage.PromptTokens, ch.Usage.CompletionTokens)
	}
	return false, nil
}

// end accepts a stream that closed after its finish_reason without
// [DONE] (some compatible servers), and counts any other as dropped.
func (s *chatStream) end(c *Client) error {
	if !s.finished {
		return c.dropped(errTruncated)
	}
	s.a.emit(s.p)
	return nil
}
