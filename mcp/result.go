package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// result is the text the model reads of a call's result: the text parts
// joined by newlines, every other part described in one line, or the
// structured content's JSON when there are no parts.
func result(r *sdk.CallToolResult) Result {
	parts := make([]string, 0, len(r.Content))
	for _, c := range r.Content {
		parts = append(parts, part(c))
	}
	if len(parts) == 0 && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return Result{Content: strings.Join(parts, "\n"), IsError: r.IsError}
}

// part is one content part as text.
func part(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data))
	case *sdk.ResourceLink:
		return fmt.Sprintf("[resource link %s %s]", c.URI, c.MIMEType)
	case *sdk.EmbeddedResource:
		if r := c.Resource; r != nil {
			if r.Text != "" {
				return r.Text
			}
			return fmt.Sprintf("[resource %s %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob))
		}
	}
	return fmt.Sprintf("[content of type %T]", c)
}

// capped cuts r's content to the Set's MaxOutput, at a line end in the
// second half of the budget when there is one, else at a rune start, and
// keeps the whole output in Full.
func (s *Set) capped(r Result) Result {
	max := s.cfg.MaxOutput
	if len(r.Content) <= max {
		return r
	}
	whole := r.Content
	cut := max
	if nl := strings.LastIndexByte(whole[:max], '\n'); nl >= max/2 {
		cut = nl + 1
	}
	for cut > 0 && !utf8.RuneStart(whole[cut]) {
		cut--
	}
	r.Content = fmt.Sprintf("%s\n[output truncated: showing %d of %d bytes; the whole output is attached]",
		strings.TrimSuffix(whole[:cut], "\n"), cut, len(whole))
	r.Full = []byte(whole)
	return r
}
