package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentcapsule/capsule/render"
)

// listKey is the top-level member of each API's body that holds the
// conversation, one element per message (or input item, or content).
var listKey = map[render.API]string{
	render.OpenAIChat:      "messages",
	render.OpenAIResponses: "input",
	render.Anthropic:       "messages",
	render.Gemini:          "contents",
	render.Ollama:          "messages",
}

// merges reports whether the API joins neighbouring messages of one role
// (Anthropic and Gemini alternate roles): there, the elements of an item
// can depend on its neighbours.
func merges(api render.API) bool { return api == render.Anthropic || api == render.Gemini }

// framed is a body cut around its conversation list: the bytes before the
// list's '[' (included), the list's elements as encoded, and the bytes
// after its ']' (included).
type framed struct {
	prefix, suffix []byte
	elems          [][]byte
}

// frame marshals p with Body and cuts the result around its conversation
// list. Each element is encoded by the same encoder, with the same
// options, as in the body of any plan that holds it, since an element's
// encoding does not depend on its siblings.
func frame(p *render.Plan) (framed, error) {
	body, err := Body(p)
	if err != nil {
		return framed{}, err
	}
	return cut(body, listKey[p.Target.API])
}

// cut finds the top-level member key of the JSON object body, an array,
// and splits body around it.
func cut(body []byte, key string) (framed, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return framed{}, fmt.Errorf("%w: not an object", errShape)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return framed{}, fmt.Errorf("wire: cut body: %w", err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return framed{}, fmt.Errorf("wire: cut body: %w", err)
		}
		if tok != key {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(raw)
		var elems []json.RawMessage
		if start < 0 || !bytes.Equal(body[start:end], raw) || json.Unmarshal(raw, &elems) != nil {
			return framed{}, fmt.Errorf("%w: member %q is not a compact array", errShape, key)
		}
		f := framed{prefix: body[:start+1], suffix: body[end-1:], elems: make([][]byte, len(elems))}
		for i, e := range elems {
			f.elems[i] = e
		}
		return f, nil
	}
	return framed{}, fmt.Errorf("%w: no member %q", errShape, key)
}

// splice joins a prefix, elements and a suffix into one body.
func splice(prefix []byte, lead [][]byte, groups []*group, suffix []byte) []byte {
	n := len(prefix) + len(suffix)
	for _, e := range lead {
		n += len(e) + 1
	}
	for _, g := range groups {
		for _, e := range g.elems {
			n += len(e) + 1
		}
	}
	b := make([]byte, 0, n)
	b = append(b, prefix...)
	first := true
	add := func(e []byte) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, e...)
	}
	for _, e := range lead {
		add(e)
	}
	for _, g := range groups {
		for _, e := range g.elems {
			add(e)
		}
	}
	return append(b, suffix...)
}
