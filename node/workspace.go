package node

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
)

var _ api.WorkspaceReader = (*Node)(nil)

// Workspace implements api.WorkspaceReader: the snapshot of the agent's
// capsule (a commit replaces the file by a rename, so a read sees one
// whole snapshot), checked as every reader checks it.
func (n *Node) Workspace(ctx context.Context, id string) (api.Workspace, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return api.Workspace{}, err
	}
	a.mu.Lock()
	listed := a.listed()
	a.mu.Unlock()
	if !listed {
		return api.Workspace{}, fmt.Errorf("%w: agent %s: this node neither holds it nor keeps a copy", api.ErrNotFound, id)
	}
	f, err := n.fsys.Open(filepath.Join(a.capsule(), filepath.FromSlash(manifest.SnapshotPath)))
	if err != nil {
		return api.Workspace{}, fmt.Errorf("workspace %s: %w", id, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, capsule.MaxSnapshotSize+1))
	if err != nil {
		return api.Workspace{}, fmt.Errorf("workspace %s: %w", id, err)
	}
	s, err := capsule.ParseSnapshot(b)
	if err != nil {
		return api.Workspace{}, fmt.Errorf("workspace %s: %w", id, err)
	}
	w := api.Workspace{Agent: id, Digest: digest.FromBytes(b).String(), Entries: []api.WorkspaceEntry{}}
	for _, e := range s.Entries {
		w.Entries = append(w.Entries, api.WorkspaceEntry{Path: e.Path, Type: string(e.Type), Size: e.Size, Exec: e.Exec,
			Blob: e.Blob.String(), Target: e.Target})
	}
	return w, nil
}
