package api

import (
	"context"
	"net/http"
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

func memoryRoutes(mux *http.ServeMux, svc LocalService) {
	mr, ok := svc.(MemoryReader)
	if !ok {
		return
	}
	mux.HandleFunc("GET "+PathAgents+"/{id}/memory/working", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		reply(w, func() (any, error) { return mr.WorkingMemory(r.Context(), id) })
	}))
}

var _ MemoryReader = (*LocalClient)(nil)

// WorkingMemory implements MemoryReader.
func (c *LocalClient) WorkingMemory(ctx context.Context, id string) (WorkingMemory, error) {
	var v WorkingMemory
	return v, c.do(ctx, http.MethodGet, agentPath(id, "/memory/working"), nil, &v)
}
