package capsule

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/digest"
)

// A snapshot.json of a large workspace is parsed and written inside a
// move's frozen window (a 1,024-file snapshot is about 140 KB), where
// encoding/json's reflection costs milliseconds. decodeSnapshotFast and
// appendEntry handle the plain shape Marshal writes (any whitespace, any
// member order) directly. Whatever they do not handle they hand back, and
// encoding/json decides: the fast path only ever accepts a document that
// encoding/json decodes to the same Snapshot, and writes the bytes
// json.Marshal writes (both checked by FuzzSnapshotFastPath).

// decodeSnapshotFast decodes b when it is a JSON object of the snapshot's
// exact members whose strings need no unescaping, and reports false for
// anything else: escapes, control characters, invalid UTF-8, members in
// another case or repeated, nulls, numbers that are not plain integers,
// trailing bytes. It does not validate; ParseSnapshot does.
func decodeSnapshotFast(b []byte) (*Snapshot, bool) {
	d := fastDecoder{b: b}
	s := &Snapshot{}
	var seenVersion, seenEntries bool
	if !d.consume('{') {
		return nil, false
	}
	for first := true; ; first = false {
		if d.consume('}') {
			break
		}
		if !first && !d.consume(',') {
			return nil, false
		}
		key, ok := d.str()
		if !ok || !d.consume(':') {
			return nil, false
		}
		switch key {
		case "version":
			n, ok := d.integer()
			if !ok || seenVersion || n != int64(int(n)) {
				return nil, false
			}
			s.Version, seenVersion = int(n), true
		case "entries":
			if seenEntries {
				return nil, false
			}
			es, ok := d.entries()
			if !ok {
				return nil, false
			}
			s.Entries, seenEntries = es, true
		default:
			return nil, false
		}
	}
	d.space()
	return s, d.i == len(d.b)
}

type fastDecoder struct {
	b []byte
	i int
}

func (d *fastDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// consume skips whitespace and then c, reporting whether c was there.
func (d *fastDecoder) consume(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a string that holds no escape and no control character and is
// valid UTF-8: exactly the bytes encoding/json would give.
func (d *fastDecoder) str() (string, bool) {
	if !d.consume('"') {
		return "", false
	}
	start := d.i
	ascii := true
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// integer reads a JSON number that is a plain integer in int64's range.
func (d *fastDecoder) integer() (int64, bool) {
	d.space()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || n > 1 && d.b[digits] == '0' {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	return v, err == nil
}

func (d *fastDecoder) boolean() (bool, bool) {
	d.space()
	switch {
	case bytes.HasPrefix(d.b[d.i:], []byte("true")):
		d.i += 4
		return true, true
	case bytes.HasPrefix(d.b[d.i:], []byte("false")):
		d.i += 5
		return false, true
	}
	return false, false
}

func (d *fastDecoder) entries() ([]Entry, bool) {
	if !d.consume('[') {
		return nil, false
	}
	out := make([]Entry, 0, bytes.Count(d.b[d.i:], []byte("\n")))
	for first := true; ; first = false {
		if d.consume(']') {
			return out, true
		}
		if !first && !d.consume(',') {
			return nil, false
		}
		e, ok := d.entry()
		if !ok {
			return nil, false
		}
		out = append(out, e)
	}
}

func (d *fastDecoder) entry() (Entry, bool) {
	var e Entry
	if !d.consume('{') {
		return e, false
	}
	var seen [6]bool
	for first := true; ; first = false {
		if d.consume('}') {
			return e, true
		}
		if !first && !d.consume(',') {
			return e, false
		}
		key, ok := d.str()
		if !ok || !d.consume(':') {
			return e, false
		}
		var field int
		switch key {
		case "path":
			e.Path, ok = d.str()
		case "type":
			var t string
			t, ok = d.str()
			e.Type, field = EntryType(t), 1
		case "exec":
			e.Exec, ok = d.boolean()
			field = 2
		case "size":
			e.Size, ok = d.integer()
			field = 3
		case "blob":
			var b string
			b, ok = d.str()
			e.Blob, field = digest.Digest(b), 4
		case "target":
			e.Target, ok = d.str()
			field = 5
		default:
			return e, false
		}
		if !ok || seen[field] {
			return e, false
		}
		seen[field] = true
	}
}

// appendEntry appends e as json.Marshal writes it: members in declaration
// order, the omitempty ones left out when zero.
func appendEntry(b []byte, e Entry) []byte {
	b = append(b, `{"path":`...)
	b = appendString(b, e.Path)
	b = append(b, `,"type":`...)
	b = appendString(b, string(e.Type))
	if e.Exec {
		b = append(b, `,"exec":true`...)
	}
	if e.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, e.Size, 10)
	}
	if e.Blob != "" {
		b = append(b, `,"blob":`...)
		b = appendString(b, string(e.Blob))
	}
	if e.Target != "" {
		b = append(b, `,"target":`...)
		b = appendString(b, e.Target)
	}
	return append(b, '}')
}

// appendString appends s quoted as json.Marshal quotes it: printable ASCII
// other than the characters it escapes is copied; anything else goes
// through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&':
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
