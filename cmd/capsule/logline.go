package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/journal"
)

// This file formats the timeline lines of `capsule log` without fmt or a
// full decode of every body: a million events print in about a second.
// Every shortcut falls back to the general path (summarize, decodeAs) for
// a body it cannot read exactly as encoding/json would, so the output is
// the same.

// timelineLine appends the line of e: time, machine, clock, epoch, kind
// (colored if asked) and summary, as "%-20s %-10s %6d %4d  %s %s\n".
func timelineLine(dst []byte, e *journal.Event, color bool) []byte {
	dst = padRight(dst, displayTime(e.Time), 20)
	dst = append(dst, ' ')
	dst = padRight(dst, shortMachine(e.Machine), 10)
	dst = append(dst, ' ')
	dst = padLeft(dst, strconv.FormatUint(e.Clock, 10), 6)
	dst = append(dst, ' ')
	dst = padLeft(dst, strconv.FormatUint(e.Epoch, 10), 4)
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

// padRight and padLeft pad s with spaces to width runes, as fmt's %-Ns
// and %Ns do.
func padRight(dst []byte, s string, width int) []byte {
	dst = append(dst, s...)
	for n := utf8.RuneCountInString(s); n < width; n++ {
		dst = append(dst, ' ')
	}
	return dst
}

func padLeft(dst []byte, s string, width int) []byte {
	for n := utf8.RuneCountInString(s); n < width; n++ {
		dst = append(dst, ' ')
	}
	return append(dst, s...)
}

// fastSummary appends summarize(e), reading the few fields of the common
// kinds straight from the canonical body and clipping them as they are
// copied.
func fastSummary(dst []byte, e *journal.Event) []byte {
	var parts [][]byte
	ok := false
	switch e.Kind {
	case journal.KindUser:
		parts, ok = fastUser(e.Body)
	case journal.KindToolResult:
		parts, ok = fastResult(e.Body)
	case journal.KindAssistant:
		parts, ok = fastAssistant(e.Body)
	}
	if ok {
		var c clipper
		c.b = make([]byte, 0, 404)
		for _, p := range parts {
			feed(&c, p)
		}
		if out, ok := c.finish(dst); ok {
			return out
		}
	}
	return append(dst, summarize(e)...)
}

func fastUser(body []byte) ([][]byte, bool) {
	v, ok := fields(body, "text", "attachments")
	if !ok || v[1] != nil {
		return nil, false // attachments: the general path counts them
	}
	t, ok := text(v[0])
	return [][]byte{t}, ok
}

func fastResult(body []byte) ([][]byte, bool) {
	v, ok := fields(body, "call_id", "content", "is_error", "attachments", "name")
	if !ok || v[3] != nil || v[2] != nil && string(v[2]) != "false" {
		return nil, false
	}
	id, ok1 := text(v[0])
	content, ok2 := text(v[1])
	return [][]byte{id, arrow, content}, ok1 && ok2
}

func fastAssistant(body []byte) ([][]byte, bool) {
	v, ok := fields(body, "text", "producer", "step", "stop_reason", "item_id", "signature")
	if !ok || v[1] == nil {
		return nil, false
	}
	p, ok := fields(v[1], "provider", "api", "model")
	if !ok {
		return nil, false
	}
	model, ok1 := text(p[2])
	t, ok2 := text(v[0])
	return [][]byte{model, colon, t}, ok1 && ok2
}

// fields returns the raw values of the named members of a canonical
// object (nil where absent). It reports false when encoding/json could
// read the object differently: a member whose name matches a wanted one
// only ignoring case (encoding/json would take it), a null value, or a
// body that is not a canonical object.
func fields(obj []byte, names ...string) ([][]byte, bool) {
	var buf [16]journal.Member
	ms, err := journal.Members(buf[:0], obj)
	if err != nil {
		return nil, false
	}
	out := make([][]byte, len(names))
	for _, m := range ms {
		for k, n := range names {
			if string(m.Name) == n {
				if string(m.Value) == "null" {
					return nil, false
				}
				out[k] = m.Value
			} else if strings.EqualFold(string(m.Name), n) {
				return nil, false
			}
		}
	}
	return out, true
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
