package secret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// MinValueLen is the shortest value a Scrubber accepts. Scrubbing a 1-byte
// secret would replace every occurrence of that byte in all model and tool
// output, and a value that short protects nothing anyway, so it is refused
// (by NewScrubber, and by "capsule secret set" before it is stored).
const MinValueLen = 4

// WeakValueError refuses a value the Scrubber could not reliably remove;
// it names the secret and the reason, never the value.
type WeakValueError struct {
	Name   string
	Reason string
}

// Error names the secret and why its value is refused.
func (e *WeakValueError) Error() string {
	return fmt.Sprintf("secret: the value of %s is refused: %s", e.Name, e.Reason)
}

// Scrubber removes resolved secret values from text before it is journaled
// or shown: every occurrence of a value, and of its JSON-escaped forms
// where they differ, is replaced with "[secret NAME]". Overlapping and
// nested occurrences are all covered; a run covered by several values is
// named by the longest one that starts first. The zero value scrubs
// nothing. A Scrubber is safe for concurrent use.
//
// Guarantee: no value (nor escaped form) occurs in Scrub's output.
// NewScrubber refuses the values for which markers could rebuild one: a
// value shorter than MinValueLen, one that occurs in a marker, contains
// one, or starts with the end of a marker or ends with its start.
type Scrubber struct {
	pats []pattern // longest first
}

// pattern is one form of one value.
type pattern struct {
	text, name string
}

// NewScrubber builds a Scrubber from resolved name -> value pairs.
func NewScrubber(values map[string]string) (*Scrubber, error) {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	markers := make([]string, len(names))
	for i, n := range names {
		markers[i] = marker(n)
	}
	s := &Scrubber{}
	for _, n := range names {
		for _, form := range forms(values[n]) {
			if err := weak(n, form, markers); err != nil {
				return nil, err
			}
			s.pats = append(s.pats, pattern{text: form, name: n})
		}
	}
	sort.SliceStable(s.pats, func(i, j int) bool { return len(s.pats[i].text) > len(s.pats[j].text) })
	return s, nil
}

// marker is what replaces a value of name.
func marker(name string) string { return "[secret " + name + "]" }

// forms returns the value and its JSON-escaped forms (with and without
// HTML escaping, as encoding/json writes them), each once.
func forms(v string) []string {
	out := []string{v}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(v)
		e := strings.TrimSuffix(b.String(), "\n")
		e = e[1 : len(e)-1]
		if !contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// weak says why form cannot be scrubbed reliably, or nil.
func weak(name, form string, markers []string) error {
	if len(form) < MinValueLen {
		return &WeakValueError{Name: name, Reason: fmt.Sprintf("shorter than %d bytes, it would scrub ordinary text", MinValueLen)}
	}
	for _, m := range markers {
		if strings.Contains(m, form) || strings.Contains(form, m) {
			return &WeakValueError{Name: name, Reason: "it is part of the text that replaces secrets"}
		}
		for k := 1; k < len(form); k++ {
			if strings.HasSuffix(m, form[:k]) || strings.HasPrefix(m, form[k:]) {
				return &WeakValueError{Name: name, Reason: "it could be rebuilt from the brackets of the text that replaces secrets"}
			}
		}
	}
	return nil
}

// Scrub returns s with every occurrence of every value replaced.
func (s *Scrubber) Scrub(text string) string {
	if s == nil || len(s.pats) == 0 {
		return text
	}
	spans := s.find(text)
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	at := 0
	for i := 0; i < len(spans); {
		run := spans[i]
		b.WriteString(text[at:run.start])
		for ; i < len(spans) && spans[i].start <= run.end; i++ {
			if spans[i].end > run.end {
				b.WriteString(marker(run.name))
				run = span{start: run.end, end: spans[i].end, name: spans[i].name}
			}
		}
		b.WriteString(marker(run.name))
		at = run.end
	}
	b.WriteString(text[at:])
	return b.String()
}

// ScrubBytes is Scrub for bytes; it returns b itself when nothing matched.
func (s *Scrubber) ScrubBytes(b []byte) []byte {
	if s == nil || len(s.pats) == 0 {
		return b
	}
	out := s.Scrub(string(b))
	if len(out) == len(b) && out == string(b) {
		return b
	}
	return []byte(out)
}

// span is one occurrence of a pattern in the text.
type span struct {
	start, end int
	name       string
}

// find returns every occurrence, overlapping ones included, sorted by
// start and, at one start, longest first.
func (s *Scrubber) find(text string) []span {
	var out []span
	for _, p := range s.pats {
		for i := 0; ; {
			j := strings.Index(text[i:], p.text)
			if j < 0 {
				break
			}
			out = append(out, span{start: i + j, end: i + j + len(p.text), name: p.name})
			i += j + 1
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].start != out[b].start {
			return out[a].start < out[b].start
		}
		return out[a].end > out[b].end
	})
	return out
}
