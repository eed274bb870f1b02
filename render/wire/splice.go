package wire

import (
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
// and splits body around it. body is compact JSON, as the encoders write
// it; anything else (whitespace between tokens, a key spelled with
// escapes) is errShape, and Render then marshals the whole body.
func cut(body []byte, key string) (framed, error) {
	if len(body) < 2 || body[0] != '{' {
		return framed{}, fmt.Errorf("%w: not an object", errShape)
	}
	want := `"` + key + `"`
	for i := 1; i < len(body) && body[i] != '}'; {
		k := skip(body, i)
		if k < 0 || k >= len(body) || body[k] != ':' {
			return framed{}, fmt.Errorf("%w: malformed member at %d", errShape, i)
		}
		v := k + 1
		end := skip(body, v)
		if end < 0 {
			return framed{}, fmt.Errorf("%w: malformed value at %d", errShape, v)
		}
		if string(body[i:k]) == want {
			return split(body, v, end)
		}
		if i = end; i < len(body) && body[i] == ',' {
			i++
		}
	}
	return framed{}, fmt.Errorf("%w: no member %q", errShape, key)
}

// split cuts body around the array body[start:end].
func split(body []byte, start, end int) (framed, error) {
	if body[start] != '[' {
		return framed{}, fmt.Errorf("%w: the list is not an array", errShape)
	}
	f := framed{prefix: body[:start+1], suffix: body[end-1:], elems: [][]byte{}}
	for i := start + 1; i < end-1; {
		e := skip(body, i)
		if e < 0 || e > end-1 {
			return framed{}, fmt.Errorf("%w: malformed element at %d", errShape, i)
		}
		f.elems = append(f.elems, body[i:e])
		if i = e; body[i] == ',' {
			i++
		}
	}
	return f, nil
}

// skip returns the index just past the compact JSON value at b[i], or -1.
func skip(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		return skipComposite(b, i)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ':' {
		if b[j] <= ' ' {
			return -1
		}
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// skipComposite returns the index just past the object or array at b[i],
// or -1.
func skipComposite(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch c := b[j]; c {
		case '"':
			e := skip(b, j)
			if e < 0 {
				return -1
			}
			j = e - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return j + 1
			}
		default:
			if c <= ' ' {
				return -1
			}
		}
	}
	return -1
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
