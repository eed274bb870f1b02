package api

import (
	"context"
	"net/http"
)

// The workspace of an agent as its capsule records it (FORMAT §5.1), for
// the web view's file tree.

// WorkspaceEntry is one path of a recorded workspace.
type WorkspaceEntry struct {
	Path   string `json:"path"`
	Type   string `json:"type"` // "file", "dir" or "symlink"
	Size   int64  `json:"size,omitempty"`
	Exec   bool   `json:"exec,omitempty"`
	Blob   string `json:"blob,omitempty"`
	Target string `json:"target,omitempty"`
}

// Workspace is the snapshot an agent's capsule holds: the workspace as of
// the capsule's last commit.
type Workspace struct {
	Agent string `json:"agent"`
	// Digest names the snapshot (artifacts/snapshot.json) read.
	Digest  string           `json:"digest"`
	Entries []WorkspaceEntry `json:"entries"`
}

// WorkspaceReader is the part of the local API that shows an agent's
// recorded workspace; a LocalService that implements it serves its route.
type WorkspaceReader interface {
	// Workspace returns the snapshot of the capsule of an agent this node
	// lists.
	Workspace(ctx context.Context, id string) (Workspace, error)
}

func workspaceRoutes(mux *http.ServeMux, svc LocalService) {
	wr, ok := svc.(WorkspaceReader)
	if !ok {
		return
	}
	mux.HandleFunc("GET "+PathAgents+"/{id}/workspace", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		reply(w, func() (any, error) { return wr.Workspace(r.Context(), id) })
	}))
}

var _ WorkspaceReader = (*LocalClient)(nil)

// Workspace implements WorkspaceReader.
func (c *LocalClient) Workspace(ctx context.Context, id string) (Workspace, error) {
	var v Workspace
	return v, c.do(ctx, http.MethodGet, agentPath(id, "/workspace"), nil, &v)
}
