package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// created is the timestamp every answer carries (2026-01-01T00:00:00Z):
// answers are a function of the request only.
const (
	created     = 1767225600
	createdText = "2026-01-01T00:00:00Z"
)

// reply is one answer being spelled in a provider's style.
type reply struct {
	model  string
	digest string // the request's digest: seeds IDs and signature nonces
	turn   turn
	conv   conversation
	body   map[string]any // the request, for per-API options
	sign   signer
	inTok  int
}

// id returns a deterministic provider-style ID: prefix and 24 hex digits
// from the request digest, the prefix and n.
func (r *reply) id(prefix string, n int) string {
	h := sha256.Sum256([]byte(r.digest + "\x00" + prefix + "\x00" + strconv.Itoa(n)))
	return prefix + hex.EncodeToString(h[:12])
}

// tokens is the simulator's token count of s: a quarter of its bytes,
// rounded up.
func tokens(s string) int { return (len(s) + 3) / 4 }

func (r *reply) reasonTok() int {
	if !r.conv.thinking {
		return 0
	}
	return tokens(r.turn.reasoning)
}

func (r *reply) outTok() int {
	n := tokens(r.turn.text) + r.reasonTok()
	for _, c := range r.turn.calls {
		n += tokens(c.name) + tokens(string(c.args))
	}
	return max(n, 1)
}

// pieces splits s into the chunks a stream sends: about three words each.
func pieces(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	words := strings.SplitAfter(s, " ")
	for i := 0; i < len(words); i += 3 {
		out = append(out, strings.Join(words[i:min(i+3, len(words))], ""))
	}
	return out
}

// stream writes server-sent events or NDJSON lines, flushing each.
type stream struct {
	w   io.Writer
	f   http.Flusher
	err error
}

func newStream(w http.ResponseWriter, contentType string) *stream {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &stream{w: w, f: f}
}

func (s *stream) write(b []byte) {
	if s.err != nil {
		return
	}
	_, s.err = s.w.Write(b)
	if s.f != nil {
		s.f.Flush()
	}
}

// event writes one SSE event; an empty name writes a data line only.
func (s *stream) event(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		s.err = fmt.Errorf("sim: stream event: %w", err)
		return
	}
	var out []byte
	if name != "" {
		out = append(out, "event: "+name+"\n"...)
	}
	out = append(out, "data: "...)
	out = append(out, b...)
	s.write(append(out, "\n\n"...))
}

// line writes one NDJSON line.
func (s *stream) line(data any) {
	b, err := json.Marshal(data)
	if err != nil {
		s.err = fmt.Errorf("sim: stream line: %w", err)
		return
	}
	s.write(append(b, '\n'))
}

// writeJSON writes a whole JSON answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "sim: encode answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// argsObject decodes call arguments into an object for the APIs that
// send them as one.
func argsObject(b json.RawMessage) map[string]any {
	m := map[string]any{}
	json.Unmarshal(b, &m)
	return m
}
