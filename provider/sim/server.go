package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/gowebpki/jcs"

	"github.com/agentcapsule/capsule/render"
)

// maxBody bounds a request body.
const maxBody = 64 << 20

// Config configures a Server. The zero value serves the simulator's
// models with the built-in signing key.
type Config struct {
	// Key signs the reasoning the models emit; empty means a fixed
	// built-in key, so separate processes accept each other's signatures.
	Key []byte
	// Replay, when set, answers every valid request from this cassette
	// (any model name) instead of running a model; a request it does not
	// hold is answered 404 with its digest. Signature checks are off in
	// replay mode: a cassette holds other issuers' signatures.
	Replay *Cassette
	// Record, when set, receives an entry for every request a model
	// answered, to be saved as a cassette.
	Record *Cassette
	// OnRequest, when set, is called with each request's log entry after
	// it is answered.
	OnRequest func(Request)
}

// Request is one entry of the request log: what the endpoint received and
// how it answered.
type Request struct {
	Seq        int             `json:"seq"`
	API        render.API      `json:"api"`
	Model      string          `json:"model"`
	Path       string          `json:"path"`
	Stream     bool            `json:"stream"`
	Digest     string          `json:"digest"`
	Status     int             `json:"status"`
	Violations []Violation     `json:"violations,omitempty"`
	Replayed   bool            `json:"replayed,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
}

// Server is the embedded model endpoint, an http.Handler. It is safe for
// concurrent use.
type Server struct {
	cfg  Config
	sign signer
	mu   sync.Mutex
	log  []Request
	emb  embedState // the embeddings endpoints' faults (embed_fault.go)
}

// New returns a server with the given configuration.
func New(cfg Config) *Server {
	key := cfg.Key
	if len(key) == 0 {
		key = defaultKey
	}
	return &Server{cfg: cfg, sign: signer{key: key}}
}

// Requests returns a copy of the request log, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Received returns the logged requests for api and model, oldest first;
// an empty api or model matches any.
func (s *Server) Received(api render.API, model string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if (api == "" || r.API == api) && (model == "" || r.Model == model) {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	r.Seq = len(s.log) + 1
	s.log = append(s.log, r)
	s.mu.Unlock()
	if s.cfg.OnRequest != nil {
		s.cfg.OnRequest(r)
	}
}

// ServeHTTP routes a request by its path, as each SDK spells it:
// .../chat/completions, .../responses, .../messages, /api/chat and
// .../models/M:generateContent or :streamGenerateContent (alt=sse or a
// JSON array), and the embeddings endpoints (embed_serve.go):
// .../embeddings, .../models/M:embedContent or :batchEmbedContents, and
// /api/embed. GET /capsule-sim/requests returns the request log.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if r.Method == http.MethodGet {
		s.serveGet(w, p)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "capsule-sim: method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		s.handle(w, r, render.OpenAIChat, "", false)
	case strings.HasSuffix(p, "/responses"):
		s.handle(w, r, render.OpenAIResponses, "", false)
	case strings.HasSuffix(p, "/messages"):
		s.handle(w, r, render.Anthropic, "", false)
	case p == "/api/chat":
		s.handle(w, r, render.Ollama, "", false)
	case strings.HasSuffix(p, "/embeddings"):
		s.handleEmbed(w, r, openaiEmbeddings)
	case strings.HasSuffix(p, ":embedContent"), strings.HasSuffix(p, ":batchEmbedContents"):
		s.handleEmbed(w, r, geminiEmbeddings)
	case p == "/api/embed":
		s.handleEmbed(w, r, ollamaEmbeddings)
	case strings.Contains(p, ":generateContent"), strings.Contains(p, ":streamGenerateContent"):
		model, method, _ := strings.Cut(geminiResource(p), ":")
		s.handle(w, r, render.Gemini, model, method == "streamGenerateContent")
	default:
		http.Error(w, "capsule-sim: no such endpoint: "+p, http.StatusNotFound)
	}
}

// geminiResource returns "MODEL:METHOD" from a Gemini path such as
// /v1beta/models/capsule-sim/planner:generateContent.
func geminiResource(p string) string {
	for _, v := range []string{"/v1beta/", "/v1alpha/", "/v1/"} {
		if _, rest, ok := strings.Cut(p, v); ok {
			return strings.TrimPrefix(rest, "models/")
		}
	}
	return strings.TrimPrefix(strings.TrimPrefix(p, "/"), "models/")
}

func (s *Server) serveGet(w http.ResponseWriter, p string) {
	switch p {
	case "/capsule-sim/requests":
		writeJSON(w, http.StatusOK, s.Requests())
	case "/v1/models", "/models":
		var data []any
		for _, m := range append(append([]string(nil), Models...), EmbedModels...) {
			data = append(data, map[string]any{"id": m, "object": "model", "created": created, "owned_by": "capsule-sim"})
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	case "/api/tags":
		var ms []any
		for _, m := range append(append([]string(nil), Models...), EmbedModels...) {
			ms = append(ms, map[string]any{"name": m, "model": m, "modified_at": createdText, "size": 0})
		}
		writeJSON(w, http.StatusOK, map[string]any{"models": ms})
	case "/":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "capsule-sim: a simulator of model APIs, not a language model. Models: %s.\n", strings.Join(Models, ", "))
	default:
		http.Error(w, "capsule-sim: no such endpoint: "+p, http.StatusNotFound)
	}
}

// digestOf keys a request: SHA-256 over the API, the model, the stream
// flag and the body in RFC 8785 canonical form (the raw bytes if it is not
// JSON), so formatting and key order do not change the key.
func digestOf(api render.API, model string, stream bool, body []byte) string {
	canon, err := jcs.Transform(body)
	if err != nil {
		canon = body
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%t\n", api, model, stream)
	h.Write(canon)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func logBody(b []byte) json.RawMessage {
	if json.Valid(b) {
		return append(json.RawMessage(nil), b...)
	}
	q, _ := json.Marshal(string(b))
	return q
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request, api render.API, model string, stream bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	req := Request{API: api, Path: r.URL.Path, Body: logBody(body)}
	if err != nil {
		status := http.StatusBadRequest // a body cut off mid-read
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			status = http.StatusRequestEntityTooLarge
		}
		s.refuse(w, req, Violation{Status: status, Message: "capsule-sim: read request: " + err.Error()})
		return
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		s.refuse(w, req, Violation{Status: http.StatusBadRequest, Message: "We could not parse the JSON body of your request: " + err.Error()})
		return
	}
	if api != render.Gemini {
		model = str(v["model"])
	}
	conv := parse(api, v)
	if api != render.Gemini {
		stream = conv.stream
	}
	req.Model, req.Stream = model, stream
	req.Digest = digestOf(api, model, stream, body)
	if s.cfg.Replay == nil && !isModel(model) {
		s.refuse(w, req, unknownModel(api, model))
		return
	}
	vs := Check(render.Target{API: api, Model: model}, body)
	if s.cfg.Replay == nil {
		vs = append(vs, s.checkSignatures(model, conv)...)
	}
	if len(vs) > 0 {
		req.Violations = vs
		s.refuse(w, req, vs[0])
		return
	}
	if s.cfg.Replay != nil {
		s.replay(w, req)
		return
	}
	s.answer(w, r, req, v, conv)
}

func isModel(m string) bool {
	for _, x := range Models {
		if x == m {
			return true
		}
	}
	return false
}

// checkSignatures refuses replayed reasoning the simulator did not issue
// to model.
func (s *Server) checkSignatures(model string, c conversation) []Violation {
	var out []Violation
	for _, sc := range c.sigs {
		if !s.sign.verify(sc.kind, model, sc.content, sc.sig) {
			out = append(out, sc.fail)
		}
	}
	return out
}

func (s *Server) refuse(w http.ResponseWriter, req Request, v Violation) {
	req.Status = v.Status
	if req.Violations == nil {
		req.Violations = []Violation{v}
	}
	s.record(req)
	writeError(w, req.API, v, "req_capsule_sim_"+strings.TrimPrefix(req.Digest, "sha256:")[:min(16, len(req.Digest))])
}

func (s *Server) replay(w http.ResponseWriter, req Request) {
	e, ok := s.cfg.Replay.Lookup(req.Digest)
	if !ok {
		s.refuse(w, req, Violation{Status: http.StatusNotFound, Message: "capsule-sim: the replay cassette holds no answer for request digest " + req.Digest})
		return
	}
	req.Status, req.Replayed = e.Status, true
	s.record(req)
	w.Header().Set("Content-Type", e.ContentType)
	w.WriteHeader(e.Status)
	io.WriteString(w, e.Body)
}

// answer runs the model and writes its answer in the API's style,
// streamed or whole. The request is logged before the first byte goes
// out, so a client that has read an answer finds its request in the log.
// When recording, the answer is built whole, added to the cassette, and
// then sent (a stream arrives at once, with the same bytes).
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req Request, v map[string]any, conv conversation) {
	rp := &reply{model: req.Model, digest: req.Digest, turn: answer(req.Model, conv), conv: conv, body: v, sign: s.sign, inTok: tokens(string(req.Body))}
	req.Status = http.StatusOK
	s.record(req)
	if s.cfg.Record == nil {
		rp.write(w, r, req.API, req.Stream)
		return
	}
	buf := &bufferWriter{header: http.Header{}, status: http.StatusOK}
	rp.write(buf, r, req.API, req.Stream)
	s.cfg.Record.Add(Entry{Digest: req.Digest, API: req.API, Model: req.Model, Stream: req.Stream,
		Status: buf.status, ContentType: buf.header.Get("Content-Type"), Body: buf.body.String()})
	for k, vs := range buf.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(buf.status)
	w.Write(buf.body.Bytes())
}

func (rp *reply) write(w http.ResponseWriter, r *http.Request, api render.API, stream bool) {
	switch {
	case api == render.OpenAIChat && stream:
		rp.chatStream(w)
	case api == render.OpenAIChat:
		rp.chat(w)
	case api == render.OpenAIResponses && stream:
		rp.responsesStream(w)
	case api == render.OpenAIResponses:
		rp.responses(w)
	case api == render.Anthropic && stream:
		rp.anthropicStream(w)
	case api == render.Anthropic:
		rp.anthropic(w)
	case api == render.Gemini && stream:
		rp.geminiStream(w, r.URL.Query().Get("alt") == "sse")
	case api == render.Gemini:
		rp.gemini(w)
	case api == render.Ollama && stream:
		rp.ollamaStream(w)
	default:
		rp.ollama(w)
	}
}

// bufferWriter is an http.ResponseWriter that keeps the answer, for
// recording.
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }

func (b *bufferWriter) WriteHeader(code int) { b.status = code }

func (b *bufferWriter) Write(p []byte) (int, error) { return b.body.Write(p) }
