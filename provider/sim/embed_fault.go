package sim

import (
	"net/http"
	"sync"
)

// Corruption names a way the embeddings endpoints spoil a successful
// answer on purpose (EmbedFaults.Corrupt).
type Corruption string

// The corruptions an embeddings answer can be given.
const (
	// CorruptTruncate sends the first half of the answer's bytes.
	CorruptTruncate Corruption = "truncate"
	// CorruptShort drops the last value of the first vector.
	CorruptShort Corruption = "short"
	// CorruptNaN makes the first value of the first vector NaN: NaN
	// bits in OpenAI's base64 encoding, the bare token NaN (as Python's
	// json module writes it) in JSON arrays.
	CorruptNaN Corruption = "nan"
	// CorruptCount drops the last vector of the answer.
	CorruptCount Corruption = "count"
)

// EmbedFaults makes the embeddings endpoints fail on purpose, so a test
// meets an endpoint that fails halfway, throttles, refuses a key or
// answers garbage. The zero value injects nothing. Faults apply to
// requests that pass the provider's rules; a refused request is refused
// as usual.
type EmbedFaults struct {
	// Status, when not 0, is the HTTP status of every embeddings request
	// that would take the count of texts embedded past FailAfter; it is
	// answered in the provider's error shape.
	Status int
	// FailAfter is how many texts are embedded before Status applies
	// (0: from the first request).
	FailAfter int
	// RetryAfter, when set, is sent as the Retry-After header of a
	// Status answer.
	RetryAfter string
	// Times, when above 0, bounds how many requests get Status; after
	// that the endpoint recovers (for retry tests).
	Times int
	// Unauthorized answers every request 401 in the provider's style,
	// quoting the key the request carried, as OpenAI's message does (in
	// full here, the worst case, so a test proves the client scrubs it).
	Unauthorized bool
	// Corrupt spoils every successful answer.
	Corrupt Corruption
}

// embedState is a server's fault settings and its count of texts
// embedded.
type embedState struct {
	mu     sync.Mutex
	faults EmbedFaults
	served int
	failed int
}

// SetEmbedFaults replaces the faults of the embeddings endpoints and
// resets the count of texts embedded.
func (s *Server) SetEmbedFaults(f EmbedFaults) {
	s.emb.mu.Lock()
	defer s.emb.mu.Unlock()
	s.emb.faults, s.emb.served, s.emb.failed = f, 0, 0
}

// EmbeddedTexts returns how many texts the embeddings endpoints have
// embedded since the last SetEmbedFaults.
func (s *Server) EmbeddedTexts() int {
	s.emb.mu.Lock()
	defer s.emb.mu.Unlock()
	return s.emb.served
}

// admit decides whether a valid request of n texts is answered: it
// returns the fault status to answer instead (0 for none), the
// Retry-After to send, and the corruption to apply.
func (e *embedState) admit(n int) (int, string, Corruption) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.faults
	if f.Unauthorized {
		return http.StatusUnauthorized, "", ""
	}
	if f.Status != 0 && e.served+n > f.FailAfter && (f.Times <= 0 || e.failed < f.Times) {
		e.failed++
		return f.Status, f.RetryAfter, ""
	}
	e.served += n
	return 0, "", f.Corrupt
}
