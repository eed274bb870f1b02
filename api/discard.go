package api

import (
	"context"
	"net/http"
)

// DiscardResult answers `capsule agent discard`: the agent as it is after
// the discard, the file its old journal was set aside as (in the agent's
// folder on the node) and the events of that journal.
type DiscardResult struct {
	Agent    AgentStatus `json:"agent"`
	SetAside string      `json:"set_aside"`
	Events   int64       `json:"events"`
}

// Discarder is the part of LocalService that discards an ephemeral agent
// instead of migrating it (FORMAT §11.9.4).
type Discarder interface {
	// DiscardAgent starts an ephemeral agent this node holds over from its
	// environment spec and workspace with an empty conversation, keeping
	// the old journal set aside; it is refused (ErrConflict, naming the
	// event) when compat.CanDiscard refuses.
	DiscardAgent(ctx context.Context, id string) (DiscardResult, error)
}

func discardRoutes(mux *http.ServeMux, svc LocalService) {
	mux.HandleFunc("POST "+PathAgents+"/{id}/discard", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		reply(w, func() (any, error) { return svc.DiscardAgent(r.Context(), id) })
	}))
}

// DiscardAgent implements LocalService.
func (c *LocalClient) DiscardAgent(ctx context.Context, id string) (DiscardResult, error) {
	var v DiscardResult
	return v, c.do(ctx, http.MethodPost, agentPath(id, "/discard"), struct{}{}, &v)
}
