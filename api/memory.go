package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// WorkingMemory answers `capsule memory show AGENT`: the agent's working
// memory as its capsule holds it (FORMAT §6.4), which every model request
// carries after the instructions.
type WorkingMemory struct {
	Agent string `json:"agent"`
	// Bytes is the size of Text; Limit the most the memory tool writes
	// (the spec's memory.working_max_bytes, or the default).
	Bytes int `json:"bytes"`
	Limit int `json:"limit"`
	// Digest is "sha256:" and the hex SHA-256 of Text, as the manifest
	// lists it.
	Digest string `json:"digest"`
	Text   string `json:"text"`
}

// MemoryReader is the part of the local API that shows an agent's
// working memory; a LocalService that implements it serves its route.
type MemoryReader interface {
	// WorkingMemory returns the working memory of an agent this node
	// holds or last held (ErrNotFound for one it never held).
	WorkingMemory(ctx context.Context, id string) (WorkingMemory, error)
}

// MemoryHit is one hit of a memory search (package memory's Hit).
type MemoryHit struct {
	Score float64 `json:"score"`
	// Event is the source event's id, "" for the working memory.
	Event   string    `json:"event,omitempty"`
	Span    *[2]int64 `json:"span,omitempty"`
	Snippet string    `json:"snippet"`
}

// MemorySearch answers `capsule memory search AGENT QUERY`.
type MemorySearch struct {
	Agent string `json:"agent"`
	// Index says how the stored index was brought up to date for the
	// search: unchanged, incremental or full (nothing is written).
	Index string      `json:"index"`
	Hits  []MemoryHit `json:"hits"`
}

// MaxMemoryQuery bounds a memory search's query, in bytes.
const MaxMemoryQuery = 4096

// MemorySearcher is the part of the local API that searches an agent's
// memory index; a LocalService that implements it serves its route.
type MemorySearcher interface {
	// SearchMemory returns the k best hits for query in the memory index
	// of an agent this node holds (ErrNotFound otherwise).
	SearchMemory(ctx context.Context, id, query string, k int) (MemorySearch, error)
}

func memoryRoutes(mux *http.ServeMux, svc LocalService) {
	if mr, ok := svc.(MemoryReader); ok {
		mux.HandleFunc("GET "+PathAgents+"/{id}/memory/working", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
			reply(w, func() (any, error) { return mr.WorkingMemory(r.Context(), id) })
		}))
	}
	if ms, ok := svc.(MemorySearcher); ok {
		mux.HandleFunc("GET "+PathAgents+"/{id}/memory/search", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
			reply(w, func() (any, error) {
				q := r.URL.Query().Get("q")
				if q == "" || len(q) > MaxMemoryQuery {
					return nil, fmt.Errorf("%w: query parameter q: want 1 to %d bytes, got %d", ErrInvalid, MaxMemoryQuery, len(q))
				}
				k, err := strconv.Atoi(r.URL.Query().Get("k"))
				if err != nil || k < 1 || k > 1000 {
					return nil, fmt.Errorf("%w: query parameter k: want a number from 1 to 1000, got %q", ErrInvalid, r.URL.Query().Get("k"))
				}
				return ms.SearchMemory(r.Context(), id, q, k)
			})
		}))
	}
}

var (
	_ MemoryReader   = (*LocalClient)(nil)
	_ MemorySearcher = (*LocalClient)(nil)
)

// SearchMemory implements MemorySearcher.
func (c *LocalClient) SearchMemory(ctx context.Context, id, query string, k int) (MemorySearch, error) {
	var v MemorySearch
	q := url.Values{"q": {query}, "k": {strconv.Itoa(k)}}
	return v, c.do(ctx, http.MethodGet, agentPath(id, "/memory/search?"+q.Encode()), nil, &v)
}

// WorkingMemory implements MemoryReader.
func (c *LocalClient) WorkingMemory(ctx context.Context, id string) (WorkingMemory, error) {
	var v WorkingMemory
	return v, c.do(ctx, http.MethodGet, agentPath(id, "/memory/working"), nil, &v)
}
