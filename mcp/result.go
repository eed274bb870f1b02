package mcp

import (
	"encoding/json"
	"fmt"
	builtin "github.com/agentcapsule/capsule/tool"
	"strings"

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

// capped cuts r's content to the Set's MaxOutput (the built-in tools' Truncate) and
// keeps the whole output in Full.
func (s *Set) capped(r Result) Result {
	shown, cut := builtin.Truncate(r.Content, s.cfg.MaxOutput)
	if cut {
		r.Full = []byte(r.Content)
		r.Content = shown
	}
	return r
}
