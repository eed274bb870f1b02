package render

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// This file holds a small, allocation-free scanner for the top-level
// members of a JSON object. Segmenting a journal needs only a few short
// fields of each body (call_id, name, step, producer, stop_reason);
// decoding every body with encoding/json would cost more than the rest of
// a render, so bodies are fully decoded only for the units that are kept.
// The scanner checks the structure it walks; a body it cannot walk is
// treated as malformed.

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index just past the string starting at b[i]
// (which must be '"'), and whether it contained a backslash. Short
// strings (keys, IDs) are walked byte by byte, which beats the setup cost
// of bytes.IndexByte; long ones (texts) jump from quote to quote.
func scanString(b []byte, i int) (end int, escaped bool, ok bool) {
	i++
	for n := 0; n < 32 && i < len(b); n++ {
		switch b[i] {
		case '"':
			return i + 1, escaped, true
		case '\\':
			escaped = true
			i += 2
			continue
		}
		i++
	}
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, false, false
		}
		q := i + j
		if !escaped && bytes.IndexByte(b[i:q], '\\') >= 0 {
			escaped = true
		}
		n := 0 // backslashes right before the quote
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, escaped, true
		}
		i = q + 1
	}
	return 0, false, false
}

// skipValue returns the index just past the JSON value starting at b[i].
func skipValue(b []byte, i int, depth int) (int, bool) {
	if depth > 200 || i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		end, _, ok := scanString(b, i)
		return end, ok
	case c == '{' || c == '[':
		return skipComposite(b, i, depth)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		return j, true
	}
	return 0, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if bytes.HasPrefix(b[i:], []byte(lit)) {
		return i + len(lit), true
	}
	return 0, false
}

// skipComposite skips an object or array starting at b[i].
func skipComposite(b []byte, i int, depth int) (int, bool) {
	closer := byte('}')
	if b[i] == '[' {
		closer = ']'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closer {
		return i + 1, true
	}
	for {
		if closer == '}' {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			end, _, ok := scanString(b, i)
			if !ok {
				return 0, false
			}
			i = skipSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			i = skipSpace(b, i+1)
		}
		end, ok := skipValue(b, i, depth+1)
		if !ok {
			return 0, false
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return 0, false
		}
		if b[i] == closer {
			return i + 1, true
		}
		if b[i] != ',' {
			return 0, false
		}
		i = skipSpace(b, i+1)
	}
}

// field is one wanted member: its key, and after a scan the raw value.
type field struct {
	key string
	raw []byte
}

// scanFields walks the top-level object in body and fills the raw values
// of the wanted keys. It stops early once all are found. It reports false
// if body is not an object it can walk.
func scanFields(body []byte, want []field) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return true
	}
	found := 0
	for {
		if i >= len(body) || body[i] != '"' {
			return false
		}
		kend, kesc, ok := scanString(body, i)
		if !ok {
			return false
		}
		key := body[i+1 : kend-1]
		i = skipSpace(body, kend)
		if i >= len(body) || body[i] != ':' {
			return false
		}
		i = skipSpace(body, i+1)
		vend, ok := skipValue(body, i, 0)
		if !ok {
			return false
		}
		if !kesc {
			for k := range want {
				if want[k].raw == nil && string(key) == want[k].key {
					want[k].raw = body[i:vend]
					found++
				}
			}
		}
		if found == len(want) {
			return true
		}
		i = skipSpace(body, vend)
		if i < len(body) && body[i] == '}' {
			return true
		}
		if i >= len(body) || body[i] != ',' {
			return false
		}
		i = skipSpace(body, i+1)
	}
}

// rawString decodes a raw JSON value that must be a string or absent.
// Strings without escapes and with valid UTF-8 take the fast path; others
// go through encoding/json so the result equals a full decode.
func rawString(raw []byte) (string, bool) {
	if raw == nil || string(raw) == "null" {
		return "", true
	}
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) && !hasControl(inner) {
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// rawEquals reports whether a raw JSON string (or absent value, which
// equals "") decodes to s, without allocating on the fast path.
func rawEquals(raw []byte, s string) bool {
	if raw == nil || string(raw) == "null" {
		return s == ""
	}
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		inner := raw[1 : len(raw)-1]
		if bytes.IndexByte(inner, '\\') < 0 && !hasControl(inner) && utf8.Valid(inner) {
			return string(inner) == s
		}
	}
	d, ok := rawString(raw)
	return ok && d == s
}

// rawSame reports whether two raw JSON strings decode to the same value.
func rawSame(a, b []byte) bool {
	if plainString(a) && plainString(b) {
		return bytes.Equal(a, b)
	}
	sa, ok1 := rawString(a)
	sb, ok2 := rawString(b)
	return ok1 && ok2 && sa == sb
}

// plainString reports whether raw is a JSON string that decodes to its
// inner bytes (no escapes, no control bytes, valid UTF-8).
func plainString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	inner := raw[1 : len(raw)-1]
	return bytes.IndexByte(inner, '\\') < 0 && !hasControl(inner) && utf8.Valid(inner)
}
