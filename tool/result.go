package tool

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Result is what one tool call returns.
//
// Content is what the model gets. When the output exceeds the workspace's
// MaxOutput, Content is its first part followed by a note
// "[output truncated: showing X of Y bytes; the whole output is attached]"
// (and, for the reading tools, a line saying how to see the rest), Full
// holds the whole output and MediaType names Full's type; the agent stores
// Full as a blob and attaches it to the tool_result event.
type Result struct {
	Content   string
	IsError   bool
	Full      []byte
	MediaType string
}

// textMediaType is the media type of Result.Full: tools output UTF-8 text.
const textMediaType = "text/plain; charset=utf-8"

// failf is an error result whose message the model reads.
func failf(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

// capped cuts r's content to max bytes (Truncate) and keeps the whole
// output in Full.
func capped(r Result, max int) Result {
	shown, cut := Truncate(r.Content, max)
	if !cut {
		return r
	}
	r.Full = []byte(r.Content)
	r.Content, r.MediaType = shown, textMediaType
	return r
}

// Truncate cuts s to at most max bytes for the model, at a line end when
// one is in the second half of the budget, else at a rune boundary, and
// adds a note that says how much is shown and that the whole output is
// attached; cut reports whether it cut. The agent's tools (the built-in
// ones and MCP servers') cap their output with it.
func Truncate(s string, max int) (shown string, cut bool) {
	if len(s) <= max {
		return s, false
	}
	n := max
	if nl := strings.LastIndexByte(s[:max], '\n'); nl >= max/2 {
		n = nl + 1
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s\n[output truncated: showing %d of %d bytes; the whole output is attached]",
		strings.TrimSuffix(s[:n], "\n"), n, len(s)), true
}
