package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentcapsule/capsule/journal"
)

// argumentForms returns a call's arguments as a JSON object (for APIs
// that take an object) and as the text of that object (for APIs that take
// a JSON string). A JSON object is the journal's bytes verbatim in both
// forms. Arguments that are not a JSON object (invalid JSON kept in
// RawArguments, or an array or scalar) become the object
// {"_raw": "<text>"} in both forms too: OpenAI-compatible servers refuse
// an arguments string that is not a JSON-encoded object. Absent arguments
// are {}.
func argumentForms(tc *journal.ToolCall) (obj json.RawMessage, text string) {
	switch {
	case len(tc.Arguments) > 0 && string(tc.Arguments) != "null":
		if isJSONObject(tc.Arguments) {
			return tc.Arguments, string(tc.Arguments)
		}
		text = string(tc.Arguments)
	case tc.RawArguments != "":
		text = tc.RawArguments
	default:
		return json.RawMessage("{}"), "{}"
	}
	obj = rawObject(text)
	return obj, string(obj)
}

// rawObject wraps text that is not a JSON object as {"_raw": text}.
func rawObject(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"_raw": text})
	return b
}

// attachmentNote is the text that stands in for an attachment: rendering
// never loads blobs, so the model is told what was attached and where.
func attachmentNote(a journal.Attachment) string {
	name := a.Name
	if name == "" {
		name = "unnamed"
	}
	return fmt.Sprintf("[attachment %q (%s, %d bytes, %s) not included]", name, a.MediaType, a.Size, a.Blob)
}

// userText is a user message's text followed by one note per attachment.
func userText(text string, atts []journal.Attachment) string {
	if len(atts) == 0 {
		return text
	}
	var b strings.Builder
	b.WriteString(text)
	for _, a := range atts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(attachmentNote(a))
	}
	return b.String()
}

// Member is one member of a JSON object, its value kept verbatim.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Members splits a JSON object into its members, in order, keeping each
// value's bytes. It returns nil for anything that is not a valid object.
func Members(obj json.RawMessage) []Member {
	if !isJSONObject(obj) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return nil
	}
	out := make([]Member, 0, len(m))
	seen := make(map[string]bool, len(m))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil
		}
		if seen[key] {
			continue // a repeated key: encoding/json keeps the last value, as m does
		}
		seen[key] = true
		out = append(out, Member{Key: key, Value: m[key]})
	}
	return out
}

// ObjectMap returns a JSON object as a map whose values are the members'
// bytes verbatim (json.RawMessage), for SDK fields typed map[string]any.
// Invalid input gives an empty map.
func ObjectMap(obj json.RawMessage) map[string]any {
	ms := Members(obj)
	out := make(map[string]any, len(ms))
	for _, m := range ms {
		out[m.Key] = m.Value
	}
	return out
}

// ResultText is a tool result's content for APIs that have no error flag:
// error results are prefixed with "Error: ".
func ResultText(r Result) string {
	if r.IsError {
		return "Error: " + r.Content
	}
	return r.Content
}
