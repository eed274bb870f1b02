package ollama

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// errNotObject is returned for a body that is not a JSON object.
var errNotObject = errors.New("not a JSON object")

// SetStream returns body with its top-level "stream" member set to on,
// changing no other byte: the member's value is replaced where it is, or
// the member is appended at the end of the object when absent.
func SetStream(body []byte, on bool) ([]byte, error) {
	val := []byte("false")
	if on {
		val = []byte("true")
	}
	start, end, err := member(body, "stream")
	if err != nil {
		return nil, err
	}
	if start >= 0 {
		return slices.Concat(body[:start], val, body[end:]), nil
	}
	end = bytes.LastIndexByte(body, '}')
	sep := []byte(",")
	if bytes.HasSuffix(bytes.TrimSpace(body[:end]), []byte("{")) {
		sep = nil
	}
	return slices.Concat(body[:end], sep, []byte(`"stream":`), val, body[end:]), nil
}

// member returns where the value of the top-level member key starts and
// ends in the object b, or -1, -1 when it has none.
func member(b []byte, key string) (int, int, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, errNotObject
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %w", errNotObject, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, 0, fmt.Errorf("%w: %w", errNotObject, err)
		}
		if t == key {
			end := int(dec.InputOffset())
			return end - len(v), end, nil
		}
	}
	return -1, -1, nil
}
