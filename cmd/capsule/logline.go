package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/agentcapsule/capsule/journal"
)

// This file formats the lines of `capsule log`: the printer, the one-line
// summaries, and a fast path that reads the common bodies without fmt or a
// full decode. Every shortcut falls back to the general path (summarize,
// decodeAs) for a body it cannot read exactly as encoding/json would, so
// the output is the same.

// printer writes events as a timeline or as raw lines.
type printer struct {
	w         io.Writer
	json      bool
	kinds     map[journal.Kind]bool
	color     bool
	rewritten bool
}

// newPrinter returns a printer writing to w; tty is the command's output,
// whose being a terminal turns color on.
func newPrinter(w, tty io.Writer, f logFlags) *printer {
	p := &printer{w: w, json: f.json}
	if len(f.kinds) > 0 {
		p.kinds = map[journal.Kind]bool{}
		for _, k := range f.kinds {
			p.kinds[journal.Kind(k)] = true
		}
	}
	if file, ok := tty.(*os.File); ok && !f.json && os.Getenv("NO_COLOR") == "" {
		p.color = term.IsTerminal(int(file.Fd()))
	}
	return p
}

func (p *printer) print(e *journal.Event) { p.w.Write(p.format(nil, e)) }

// flush flushes the printer's writer if it buffers.
func (p *printer) flush() error {
	if f, ok := p.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// format appends the line that shows e to dst, nothing when the kind
// filter hides it. It reads only p's settings, so many goroutines may
// format at once.
func (p *printer) format(dst []byte, e *journal.Event) []byte {
	if p.kinds != nil && !p.kinds[e.Kind] {
		return dst
	}
	if p.json {
		return append(journal.AppendEncode(dst, e), '\n')
	}
	return timelineLine(dst, e, p.color)
}

func displayTime(t string) string {
	if t == "" {
		return "-"
	}
	if len(t) >= 19 {
		return t[:10] + " " + t[11:19]
	}
	return t
}

func shortMachine(m string) string {
	if len(m) > 10 {
		return m[:10]
	}
	return m
}

func colorOf(k journal.Kind) string {
	switch k {
	case journal.KindUser:
		return "\x1b[32m"
	case journal.KindAssistant, journal.KindReasoning:
		return "\x1b[36m"
	case journal.KindToolCall, journal.KindToolResult:
		return "\x1b[33m"
	case journal.KindFrozen, journal.KindResumed, journal.KindMoved, journal.KindEpoch, journal.KindModelChange:
		return "\x1b[35m"
	}
	return "\x1b[2m"
}

// summarize renders one line for an event.
func summarize(e *journal.Event) string {
	if !e.Kind.Known() {
		return fmt.Sprintf("(kind unknown to this release, %d bytes kept as written)", len(e.Body))
	}
	return clipLine(summaries[e.Kind](e.Body))
}

// decodeAs unmarshals a body into T for display; a body that does not
// decode shows as its zero value.
func decodeAs[T any](body []byte) T {
	var v T
	_ = json.Unmarshal(body, &v)
	return v
}

var summaries = map[journal.Kind]func([]byte) string{
	journal.KindInstruction: func(b []byte) string {
		v := decodeAs[journal.Instruction](b)
		return "[" + v.Role + "] " + v.Text
	},
	journal.KindUser: func(b []byte) string {
		v := decodeAs[journal.UserMessage](b)
		if len(v.Attachments) > 0 {
			return fmt.Sprintf("%s (+%d attachment(s))", v.Text, len(v.Attachments))
		}
		return v.Text
	},
	journal.KindAssistant: func(b []byte) string {
		v := decodeAs[journal.AssistantMessage](b)
		return v.Producer.Model + ": " + v.Text
	},
	journal.KindReasoning: func(b []byte) string {
		v := decodeAs[journal.Reasoning](b)
		if v.Text == "" {
			return v.Producer.Model + ": (opaque reasoning)"
		}
		return v.Producer.Model + ": " + v.Text
	},
	journal.KindToolCall: func(b []byte) string {
		v := decodeAs[journal.ToolCall](b)
		args := string(v.Arguments)
		if args == "" {
			args = v.RawArguments
		}
		return fmt.Sprintf("%s %s(%s)", v.CallID, v.Name, args)
	},
	journal.KindToolResult: func(b []byte) string {
		v := decodeAs[journal.ToolResult](b)
		if v.IsError {
			return v.CallID + " -> [error] " + v.Content
		}
		return v.CallID + " -> " + v.Content
	},
	journal.KindModelChange: func(b []byte) string {
		v := decodeAs[journal.ModelChange](b)
		return "-> " + v.Provider + "/" + v.API + "/" + v.Model
	},
	journal.KindUsage: func(b []byte) string {
		v := decodeAs[journal.Usage](b)
		return fmt.Sprintf("%s: %d in, %d out (estimated %d)", v.Producer.Model, v.InputTokens, v.OutputTokens, v.EstimatedTokens)
	},
	journal.KindFrozen:  func(b []byte) string { return decodeAs[journal.Frozen](b).Reason },
	journal.KindResumed: func(b []byte) string { return decodeAs[journal.Resumed](b).Reason },
	journal.KindMoved: func(b []byte) string {
		v := decodeAs[journal.Moved](b)
		return fmt.Sprintf("%s -> %s (epoch %d)", v.From, v.To, v.Epoch)
	},
	journal.KindEpoch: func(b []byte) string {
		v := decodeAs[journal.EpochStart](b)
		return fmt.Sprintf("epoch %d held by %s", v.Epoch, v.Holder)
	},
}

// clipLine puts s on one line (runs of white space become one space, none
// at the ends, as strings.Fields and a join would) and cuts it to 100
// runes, the last an ellipsis. It reads only as much of s as it keeps.
func clipLine(s string) string {
	var c clipper
	feed(&c, s)
	b, ok := c.finish()
	if !ok {
		return clipSlow(s)
	}
	return string(b)
}

// clipSlow is clipLine by definition.
func clipSlow(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		return string(r[:99]) + "…"
	}
	return s
}

// clipper computes clipLine of the concatenation of the pieces it is fed,
// without building it: it appends the line to b, from base on.
type clipper struct {
	b        []byte
	base     int  // where the clipped line starts in b
	runes    int  // runes appended, counted past 100 only to tell "more"
	at99     int  // len(b) once 99 runes are in, 0 before
	slow     bool // a RuneError among the first 99: []rune would rewrite it
	inField  bool
	stopped  bool
	hasField bool
}

// asciiSpace marks the ASCII bytes unicode.IsSpace holds.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// feed adds a piece of text (a string, or bytes that are read now). Runs of
// ASCII that is not white space, most of any text, are copied whole.
func feed[T string | []byte](c *clipper, s T) {
	for i := 0; i < len(s) && !c.stopped; {
		if s[i] < utf8.RuneSelf && !asciiSpace[s[i]] {
			i = feedRun(c, s, i)
			continue
		}
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		}
		if r < utf8.RuneSelf || unicode.IsSpace(r) {
			c.inField = false
			i += n
			continue
		}
		c.startField()
		c.slow = c.slow || r == utf8.RuneError && c.runes < 99
		c.b = append(c.b, s[i:i+n]...)
		i += n
		c.count()
	}
}

// feedRun appends the ASCII bytes from s[i] that are not white space, up to
// the one that makes the line longer than 100 runes, and returns where it
// stopped.
func feedRun[T string | []byte](c *clipper, s T, i int) int {
	c.startField()
	j := i
	for j < len(s) && s[j] < utf8.RuneSelf && !asciiSpace[s[j]] {
		j++
	}
	j = min(j, i+101-c.runes) // the count goes past 100 only to say so
	if c.runes < 99 && c.runes+(j-i) >= 99 {
		c.at99 = len(c.b) + 99 - c.runes
	}
	c.b = append(c.b, s[i:j]...)
	c.runes += j - i
	c.stopped = c.runes > 100
	return j
}

// startField puts the space between two fields.
func (c *clipper) startField() {
	if !c.inField && c.hasField {
		c.b = append(c.b, ' ')
		c.count()
	}
	c.inField, c.hasField = true, true
}

func (c *clipper) count() {
	c.runes++
	if c.runes == 99 {
		c.at99 = len(c.b)
	}
	c.stopped = c.runes > 100
}

// finish returns b with the clipped line in place; false means the caller
// must take clipSlow (b is then cut back to base).
func (c *clipper) finish() ([]byte, bool) {
	if c.runes <= 100 {
		return c.b, true
	}
	if c.slow {
		return c.b[:c.base], false
	}
	return append(c.b[:c.at99], "…"...), true
}

// timelineLine appends the line of e: time, machine, clock, epoch, kind
// (colored if asked) and summary, as "%-20s %-10s %6d %4d  %s %s\n".
func timelineLine(dst []byte, e *journal.Event, color bool) []byte {
	dst = appendTime(dst, e.Time)
	dst = append(dst, ' ')
	dst = padRight(dst, shortMachine(e.Machine), 10)
	dst = append(dst, ' ')
	var num [20]byte
	dst = padLeft(dst, strconv.AppendUint(num[:0], e.Clock, 10), 6)
	dst = append(dst, ' ')
	dst = padLeft(dst, strconv.AppendUint(num[:0], e.Epoch, 10), 4)
	dst = append(dst, ' ', ' ')
	if color {
		dst = append(dst, colorOf(e.Kind)...)
	}
	dst = padRight(dst, string(e.Kind), 12)
	if color {
		dst = append(dst, "\x1b[0m"...)
	}
	dst = append(dst, ' ')
	dst = fastSummary(dst, e)
	return append(dst, '\n')
}

// appendTime appends displayTime(t) padded to 20 runes, without building
// the string.
func appendTime(dst []byte, t string) []byte {
	if len(t) < 19 {
		return padRight(dst, displayTime(t), 20)
	}
	start := len(dst)
	dst = append(append(append(dst, t[:10]...), ' '), t[11:19]...)
	for n := utf8.RuneCount(dst[start:]); n < 20; n++ {
		dst = append(dst, ' ')
	}
	return dst
}

// padRight and padLeft pad s with spaces to width runes, as fmt's %-Ns
// and %Ns do.
func padRight[T string | []byte](dst []byte, s T, width int) []byte {
	dst = append(dst, s...)
	for n := utf8.RuneCountInString(string(s)); n < width; n++ {
		dst = append(dst, ' ')
	}
	return dst
}

func padLeft[T string | []byte](dst []byte, s T, width int) []byte {
	for n := utf8.RuneCountInString(string(s)); n < width; n++ {
		dst = append(dst, ' ')
	}
	return append(dst, s...)
}

// fastSummary appends summarize(e), reading the few fields of the common
// kinds straight from the canonical body and clipping them as they are
// copied.
func fastSummary(dst []byte, e *journal.Event) []byte {
	var parts summaryParts
	ok := false
	switch e.Kind {
	case journal.KindUser:
		ok = parts.user(e.Body)
	case journal.KindToolResult:
		ok = parts.result(e.Body)
	case journal.KindAssistant:
		ok = parts.assistant(e.Body)
	}
	if ok {
		c := clipper{b: dst, base: len(dst)}
		for _, p := range parts.p[:parts.n] {
			feed(&c, p)
		}
		out, ok := c.finish()
		if ok {
			return out
		}
		dst = out
	}
	return append(dst, summarize(e)...)
}

// summaryParts are the pieces of a summary, in order, in place so that a
// line's summary allocates nothing.
type summaryParts struct {
	p [3][]byte
	n int
}

func (s *summaryParts) set(parts ...[]byte) {
	s.n = copy(s.p[:], parts)
}

func (s *summaryParts) user(body []byte) bool {
	var v [2][]byte
	if !fields(v[:], body, "text", "attachments") || v[1] != nil {
		return false // attachments: the general path counts them
	}
	t, ok := text(v[0])
	s.set(t)
	return ok
}

func (s *summaryParts) result(body []byte) bool {
	var v [5][]byte
	if !fields(v[:], body, "call_id", "content", "is_error", "attachments", "name") || v[3] != nil || v[2] != nil && string(v[2]) != "false" {
		return false
	}
	id, ok1 := text(v[0])
	content, ok2 := text(v[1])
	s.set(id, arrow, content)
	return ok1 && ok2
}

func (s *summaryParts) assistant(body []byte) bool {
	var v [6][]byte
	if !fields(v[:], body, "text", "producer", "step", "stop_reason", "item_id", "signature") || v[1] == nil {
		return false
	}
	var p [3][]byte
	if !fields(p[:], v[1], "provider", "api", "model") {
		return false
	}
	model, ok1 := text(p[2])
	t, ok2 := text(v[0])
	s.set(model, colon, t)
	return ok1 && ok2
}

// fields sets out[k] to the raw value of the member names[k] of a
// canonical object (nil where absent). It reports false when encoding/json
// could read the object differently: a member whose name matches a wanted
// one only ignoring case (encoding/json would take it), a null value, or a
// body that is not a canonical object.
func fields(out [][]byte, obj []byte, names ...string) bool {
	var buf [16]journal.Member
	ms, err := journal.Members(buf[:0], obj)
	if err != nil {
		return false
	}
	for _, m := range ms {
		for k, n := range names {
			if string(m.Name) == n {
				if string(m.Value) == "null" {
					return false
				}
				out[k] = m.Value
			} else if strings.EqualFold(string(m.Name), n) {
				return false
			}
		}
	}
	return true
}

var arrow, colon = []byte(" -> "), []byte(": ")

// text decodes a raw JSON string (empty when absent); false for any other
// value, whose decoding the general path handles. Without escapes the
// string is its inner bytes (canonical text is valid UTF-8).
func text(raw []byte) ([]byte, bool) {
	if raw == nil {
		return nil, true
	}
	if len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner, true
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return []byte(s), err == nil
}
