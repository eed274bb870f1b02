package memory

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/journal"
)

// ChunkerName names the chunker of this file and its version; the index's
// fingerprint covers it (FORMAT §11.7.2).
const ChunkerName = "capsule-chunk/1"

// Limits of capsule-chunk/1, in bytes of UTF-8 text.
const (
	// ChunkMax is the largest chunk.
	ChunkMax = 2048
	// ChunkOverlap is how many bytes at most a chunk repeats of the one before.
	ChunkOverlap = 256
)

// Chunk is one indexed piece of text: the text of a journal event, a span
// of a long event's text, or a span of the working memory.
type Chunk struct {
	// Event is the id of the event the text comes from, "" for the working memory.
	Event string
	// Span is [start, end) in bytes of the event's text (when HasSpan) or
	// of the working memory (always).
	Span    [2]int64
	HasSpan bool
	// Text is the chunk's text. The index file stores only its digest.
	Text string

	machine string // of the event, to tell which chunks a watermark covers
	seq     uint64
}

// TextOf returns the text capsule-chunk/1 indexes of an event, and
// false for an event it does not index: the text of a user message, of an
// assistant message, and the content of a tool result. Instructions,
// reasoning, tool calls, usage and lifecycle events are not indexed, nor
// are attachments (blobs) or events of kinds this release does not know.
func TextOf(e *journal.Event) (string, bool) {
	var text string
	var err error
	switch e.Kind {
	case journal.KindUser:
		var b journal.UserMessage
		err = json.Unmarshal(e.Body, &b)
		text = b.Text
	case journal.KindAssistant:
		var b journal.AssistantMessage
		err = json.Unmarshal(e.Body, &b)
		text = b.Text
	case journal.KindToolResult:
		var b journal.ToolResult
		err = json.Unmarshal(e.Body, &b)
		text = b.Content
	default:
		return "", false
	}
	if err != nil || blank(text) {
		return "", false
	}
	return text, true
}

// blank reports whether text holds no token at all.
func blank(text string) bool {
	empty := true
	Tokenize(text, func([]byte) { empty = false })
	return empty
}

// EventChunks splits the text of event id: a text of at most ChunkMax bytes
// is one chunk without a span; a longer one is cut by Spans and each piece
// carries its span in the text.
func EventChunks(id, text string) []Chunk {
	if len(text) <= ChunkMax {
		return []Chunk{{Event: id, Text: text}}
	}
	return spanChunks(id, text)
}

// WorkingMemoryChunks splits the working memory by Spans; every chunk has
// its span. Spans without a token are left out.
func WorkingMemoryChunks(wm []byte) []Chunk {
	return spanChunks("", string(wm))
}

func spanChunks(id, text string) []Chunk {
	var out []Chunk
	for _, s := range Spans(text) {
		t := text[s[0]:s[1]]
		if blank(t) {
			continue
		}
		out = append(out, Chunk{Event: id, Span: [2]int64{int64(s[0]), int64(s[1])}, HasSpan: true, Text: t})
	}
	return out
}

// Spans cuts text into windows of at most ChunkMax bytes: each window ends
// after the last white space (space, tab, newline) in its second half, or
// at the last rune boundary within ChunkMax when there is none, and the
// next window starts ChunkOverlap bytes before that end, moved forward to a
// rune boundary and then past any white space, but always after the
// previous window's start. The last window ends at the end of text.
func Spans(text string) [][2]int {
	var out [][2]int
	for start := 0; start < len(text); {
		end := start + ChunkMax
		if end >= len(text) {
			return append(out, [2]int{start, len(text)})
		}
		end = cutPoint(text, start, end)
		out = append(out, [2]int{start, end})
		next := max(end-ChunkOverlap, start+1)
		for next < end && !utf8.RuneStart(text[next]) {
			next++
		}
		for next < end && isSpace(text[next]) {
			next++
		}
		start = next
	}
	return out
}

// cutPoint is where a window [start, limit) ends: after white space in its
// second half, else at a rune boundary.
func cutPoint(text string, start, limit int) int {
	for i := limit - 1; i > start+ChunkMax/2; i-- {
		if isSpace(text[i]) {
			return i + 1
		}
	}
	for limit > start+1 && !utf8.RuneStart(text[limit]) {
		limit--
	}
	return limit
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
