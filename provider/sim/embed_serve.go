package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentcapsule/capsule/render"
)

// The request-log names of the embeddings APIs (Request.API). They are
// not render APIs: nothing is rendered for them.
const (
	OpenAIEmbeddings render.API = "openai-embeddings" // POST …/embeddings
	GeminiEmbed      render.API = "gemini-embed"      // POST …/models/M:embedContent, :batchEmbedContents
	OllamaEmbed      render.API = "ollama-embed"      // POST /api/embed
)

// embedJob is a valid embeddings request: what to embed and how to answer.
type embedJob struct {
	model  string
	items  []embedItem
	base64 bool // OpenAI's encoding_format
	single bool // Gemini's embedContent (one embedding, not a list)
}

// embedItem is one text to embed and the options that shape its vector.
type embedItem struct {
	text string // already cut to the model's context where the API truncates
	task string // Gemini's taskType, "" otherwise
	dims int
}

// embedAPI is one provider's embeddings endpoint: its rules and its
// answer's shape.
type embedAPI struct {
	api   render.API
	parse func(r *http.Request, v map[string]any) (embedJob, *Violation)
	write func(w http.ResponseWriter, job embedJob, vecs [][]float32, c Corruption)
}

// handleEmbed serves one embeddings request: it checks it against the
// provider's rules, applies the faults, and answers the vectors.
func (s *Server) handleEmbed(w http.ResponseWriter, r *http.Request, e embedAPI) {
	job, req, bad := readEmbed(w, r, e)
	if bad != nil {
		s.refuseEmbed(w, req, *bad, "")
		return
	}
	v := s.emb.admit(len(job.items))
	if v.hold != nil {
		select {
		case <-v.hold:
		case <-r.Context().Done():
			return
		}
	}
	if v.status != 0 {
		s.refuseEmbed(w, req, faultViolation(e.api, v.status, requestKey(r)), v.retryAfter)
		return
	}
	vecs := make([][]float32, len(job.items))
	for i, it := range job.items {
		vecs[i] = Vector(job.model, it.task, it.text, it.dims)
	}
	req.Status = http.StatusOK
	s.record(req)
	e.write(w, job, vecs, v.corrupt)
}

// readEmbed reads and checks a request; it returns the job, the request's
// log entry, and the first rule it breaks (nil if none).
func readEmbed(w http.ResponseWriter, r *http.Request, e embedAPI) (embedJob, Request, *Violation) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	req := Request{API: e.api, Path: r.URL.Path, Body: logBody(raw), Digest: digestOf(e.api, "", false, raw)}
	if err != nil {
		status := http.StatusBadRequest // a body cut off mid-read
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			status = http.StatusRequestEntityTooLarge
		}
		return embedJob{}, req, &Violation{Status: status, Message: "capsule-sim: read request: " + err.Error()}
	}
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		return embedJob{}, req, &Violation{Status: http.StatusBadRequest, Message: parseMessage(e.api, err)}
	}
	job, bad := e.parse(r, body)
	req.Model = job.model
	return job, req, bad
}

func parseMessage(api render.API, err error) string {
	if api == OpenAIEmbeddings {
		return "We could not parse the JSON body of your request: " + err.Error()
	}
	return err.Error()
}

func (s *Server) refuseEmbed(w http.ResponseWriter, req Request, v Violation, retryAfter string) {
	req.Status = v.Status
	req.Violations = []Violation{v}
	s.record(req)
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	writeJSON(w, v.Status, embedErrorBody(req.API, v))
}

// embedErrorBody is v in the provider's error object, with the type or
// status each provider gives that HTTP status.
func embedErrorBody(api render.API, v Violation) any {
	switch api {
	case GeminiEmbed:
		return map[string]any{"error": map[string]any{"code": v.Status, "message": v.Message, "status": grpcStatus(v.Status)}}
	case OllamaEmbed:
		return map[string]any{"error": v.Message}
	}
	typ := "invalid_request_error"
	switch {
	case v.Status == http.StatusTooManyRequests:
		typ = "requests"
	case v.Status >= 500:
		typ = "server_error"
	}
	var code any
	if v.Code != "" {
		code = v.Code
	}
	return map[string]any{"error": map[string]any{"message": v.Message, "type": typ, "param": nil, "code": code}}
}

// grpcStatus is the status name Google APIs give an HTTP status.
func grpcStatus(status int) string {
	switch status {
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "INVALID_ARGUMENT"
}

// faultViolation is an injected failure, worded as each provider words it.
func faultViolation(api render.API, status int, key string) Violation {
	if status == http.StatusUnauthorized {
		return unauthorized(api, key)
	}
	v := Violation{Status: status, Message: fmt.Sprintf("capsule-sim: injected HTTP %d", status)}
	switch {
	case api == OpenAIEmbeddings && status == http.StatusTooManyRequests:
		v.Message, v.Code = "Rate limit reached for "+Embed+" (capsule-sim: injected).", "rate_limit_exceeded"
	case api == OpenAIEmbeddings && status >= 500:
		v.Message = "The server had an error while processing your request. Sorry about that! (capsule-sim: injected)"
	case api == GeminiEmbed && status == http.StatusTooManyRequests:
		v.Message = "Resource has been exhausted (e.g. check quota). (capsule-sim: injected)"
	case api == GeminiEmbed && status == http.StatusServiceUnavailable:
		v.Message = "The model is overloaded. Please try again later. (capsule-sim: injected)"
	case api == OllamaEmbed && status == http.StatusServiceUnavailable:
		v.Message = "server busy, please try again.  maximum pending requests exceeded (capsule-sim: injected)"
	}
	return v
}

// unauthorized refuses a key, quoting it in full: OpenAI quotes a masked
// key; the simulator is the worst case.
func unauthorized(api render.API, key string) Violation {
	switch api {
	case GeminiEmbed: // Gemini answers a bad key 400 INVALID_ARGUMENT
		return Violation{Status: http.StatusBadRequest, Message: "API key not valid. Please pass a valid API key. (capsule-sim received " + key + ")"}
	case OllamaEmbed:
		return Violation{Status: http.StatusUnauthorized, Message: "unauthorized: " + key}
	}
	return Violation{Status: http.StatusUnauthorized, Code: "invalid_api_key",
		Message: "Incorrect API key provided: " + key + ". You can find your API key at https://platform.openai.com/account/api-keys."}
}

// requestKey is the key a request carries, in whichever header its SDK
// puts it.
func requestKey(r *http.Request) string {
	if k := r.Header.Get("x-goog-api-key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// nanSentinel marks the value CorruptNaN turns into NaN once the answer
// is encoded (JSON has no NaN to marshal).
const nanSentinel = float32(-1.2345678e-30)

// corruptVectors applies the corruptions that change the vectors.
func corruptVectors(vecs [][]float32, c Corruption) [][]float32 {
	switch {
	case c == CorruptShort && len(vecs) > 0 && len(vecs[0]) > 0:
		vecs[0] = vecs[0][:len(vecs[0])-1]
	case c == CorruptCount && len(vecs) > 0:
		vecs = vecs[:len(vecs)-1]
	case c == CorruptNaN && len(vecs) > 0 && len(vecs[0]) > 0:
		vecs[0][0] = nanSentinel
	}
	return vecs
}

// writeEmbedJSON writes an answer, or its first half for CorruptTruncate.
func writeEmbedJSON(w http.ResponseWriter, v any, c Corruption) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "sim: encode answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	switch c {
	case CorruptTruncate:
		b = b[:len(b)/2]
	case CorruptNaN: // the bare token NaN, as Python's json module writes it
		mark, _ := json.Marshal(nanSentinel)
		b = bytes.Replace(b, mark, []byte("NaN"), 1)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}
