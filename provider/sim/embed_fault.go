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
	// Hold, when set, holds every valid request until it is closed or the
	// client goes away (then nothing is answered), so a test can cancel
	// a request in flight.
	Hold <-chan struct{}
}

// verdict is what the faults make of one valid request.
type verdict struct {
	status     int // a fault status to answer instead, 0 for none
	retryAfter string
	corrupt    Corruption
	hold       <-chan struct{}
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

// admit decides how a valid request of n texts is answered, and counts
// its texts as embedded when they will be.
func (e *embedState) admit(n int) verdict {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.faults
	v := verdict{hold: f.Hold}
	switch {
	case f.Unauthorized:
		v.status = http.StatusUnauthorized
	case f.Status != 0 && e.served+n > f.FailAfter && (f.Times <= 0 || e.failed < f.Times):
		e.failed++
		v.status, v.retryAfter = f.Status, f.RetryAfter
	default:
		e.served += n
		v.corrupt = f.Corrupt
	}
	return v
}
