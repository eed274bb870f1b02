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

// capped cuts r's content to max bytes, at a line end when one is in the
// second half of the budget, else at a rune boundary, and keeps the whole
// output in Full.
func capped(r Result, max int) Result {
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
	r.MediaType = textMediaType
	return r
}
