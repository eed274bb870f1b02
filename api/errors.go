package api

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Sentinels a node wraps into its errors so the handlers can choose an HTTP
// status, and that a client's *Error unwraps to, so callers on both ends
// branch with errors.Is.
var (
	ErrNotFound    = errors.New("api: not found")
	ErrConflict    = errors.New("api: conflict")
	ErrInvalid     = errors.New("api: invalid request")
	ErrUnavailable = errors.New("api: unavailable")
	ErrForbidden   = errors.New("api: forbidden")
)

var codes = []struct {
	code   string
	status int
	err    error
}{
	{"not_found", http.StatusNotFound, ErrNotFound},
	{"conflict", http.StatusConflict, ErrConflict},
	{"invalid", http.StatusBadRequest, ErrInvalid},
	{"unavailable", http.StatusServiceUnavailable, ErrUnavailable},
	{"forbidden", http.StatusForbidden, ErrForbidden},
}

// Error is an error as it travels on the wire: a code from a short fixed
// list and a message. It unwraps to the sentinel of its code.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Reason is a finer code some errors carry (an approval's refusal
	// code, api/approve.go); empty for most.
	Reason string `json:"reason,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel matching the code, or nil.
func (e *Error) Unwrap() error {
	for _, c := range codes {
		if c.code == e.Code {
			return c.err
		}
	}
	return nil
}

// toError classifies err once, at the edge.
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return &Error{Status: c.status, Code: c.code, Message: err.Error()}
		}
	}
	return &Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()}
}

func statusOf(code string) int {
	for _, c := range codes {
		if c.code == code {
			return c.status
		}
	}
	return http.StatusInternalServerError
}

type errorBody struct {
	Error *Error `json:"error"`
}

func writeError(w http.ResponseWriter, err error) {
	e := toError(err)
	status := e.Status
	if status == 0 {
		status = statusOf(e.Code)
	}
	writeJSON(w, status, errorBody{Error: e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
