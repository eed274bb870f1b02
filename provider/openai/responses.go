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

// The Responses answer, as far as the journal needs it (wire structs, as
// for Chat: the arguments text and the encrypted content exactly as sent).
type (
	respResponse struct {
		Status            string     `json:"status"`
		Error             *wireError `json:"error"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Output []respItem `json:"output"`
		Usage  *struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	respItem struct {
		Type             string          `json:"type"`
		ID               string          `json:"id"`
		Content          []respPart      `json:"content"`
		Summary          []respPart      `json:"summary"`
		EncryptedContent string          `json:"encrypted_content"`
		CallID           string          `json:"call_id"`
		Name             string          `json:"name"`
		Arguments        json.RawMessage `json:"arguments"`
	}
	respPart struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	// respEvent is one streamed event (response.*, or error).
	respEvent struct {
		Type        string        `json:"type"`
		Delta       string        `json:"delta"`
		OutputIndex int           `json:"output_index"`
		Item        *respItem     `json:"item"`
		Response    *respResponse `json:"response"`
		wireError
	}
)

func (p *parser) responsesWhole(b []byte) error {
	var v respResponse
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("openai: responses answer: %w", err)
	}
	return p.responsesDone(&v, nil)
}

// responsesDone adds the journal bodies of a finished response. streamed
// holds the items of the stream's output_item.done events, used when the
// final response lists none. Unstreamed, the text goes to OnText here.
func (p *parser) responsesDone(v *respResponse, streamed []respItem) error {
	if v.Status == "failed" || v.Error != nil {
		e := wireError{Message: "response failed"}
		if v.Error != nil {
			e = *v.Error
		}
		return p.failed(e)
	}
	p.stop = v.Status
	if v.Status == "incomplete" && v.IncompleteDetails != nil && v.IncompleteDetails.Reason != "" {
		p.stop = v.IncompleteDetails.Reason
	}
	items := v.Output
	if len(items) == 0 {
		items = streamed
	}
	last := -1
	for i, it := range items {
		if it.Type == "message" {
			last = i
		}
	}
	for i, it := range items {
		p.responsesItem(it, i == last, streamed == nil)
	}
	if v.Usage != nil {
		p.setUsage(v.Usage.InputTokens, v.Usage.OutputTokens)
	}
	return nil
}

// responsesItem adds one output item; the last message carries the stop
// reason. Items of other types (hosted tools) are not journaled.
func (p *parser) responsesItem(it respItem, last, whole bool) {
	switch it.Type {
	case "reasoning":
		r := journal.Reasoning{ItemID: it.ID, Encrypted: it.EncryptedContent}
		for _, s := range it.Summary {
			r.Summary = append(r.Summary, s.Text)
		}
		r.Text = strings.Join(r.Summary, "\n\n")
		if r.Text == "" {
			r.Text = partsText(it.Content, "reasoning_text")
		}
		p.reasoning(r)
	case "message":
		text := partsText(it.Content, "output_text")
		if text == "" {
			text = partsText(it.Content, "refusal")
		}
		if whole {
			p.onText(text)
		}
		stop := ""
		if last {
			stop = p.stop
		}
		p.text(text, it.ID, stop)
	case "function_call":
		p.call(it.CallID, it.Name, argumentsText(it.Arguments), it.ID)
	}
}

// partsText joins the texts of a content list's parts of one type.
func partsText(parts []respPart, typ string) string {
	var b strings.Builder
	for _, pt := range parts {
		if pt.Type != typ {
			continue
		}
		if typ == "refusal" {
			b.WriteString(pt.Refusal)
		} else {
			b.WriteString(pt.Text)
		}
	}
	return b.String()
}

// argumentsText is a function call's arguments: the JSON string's
// contents, as the API sends them, or the raw JSON of a server that sends
// an object.
func argumentsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
		return string(t)
	}
	return ""
}

// responsesStream reads a streamed Responses answer.
type responsesStream struct {
	p     *parser
	items map[int]respItem
}

func (s *responsesStream) event(ev ssestream.Event) (bool, error) {
	var e respEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return false, fmt.Errorf("openai: responses stream event %q: %w", ev.Type, err)
	}
	if e.Type == "" {
		e.Type = ev.Type
	}
	switch e.Type {
	case "response.output_text.delta":
		s.p.onText(e.Delta)
	case "response.output_item.done":
		if e.Item != nil {
			if s.items == nil {
				s.items = map[int]respItem{}
			}
			s.items[e.OutputIndex] = *e.Item
		}
	case "response.completed", "response.incomplete", "response.failed":
		if e.Response == nil {
			return false, fmt.Errorf("openai: responses stream: %s without its response", e.Type)
		}
		return true, s.p.responsesDone(e.Response, s.streamed())
	case "error":
		return false, s.p.failed(e.wireError)
	}
	return false, nil
}

// streamed is the output_item.done items in output order.
func (s *responsesStream) streamed() []respItem {
	idx := make([]int, 0, len(s.items))
	for i := range s.items {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]respItem, 0, len(idx))
	for _, i := range idx {
		out = append(out, s.items[i])
	}
	return out
}

// end: a Responses stream without its final event was cut.
func (s *responsesStream) end(c *Client) error {
	return c.dropped(errTruncated)
}
