package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// workingMemory returns the agent's working memory as its capsule holds
// it (memory/working_memory.md, FORMAT §6.4): what every model request
// carries after the instructions. A capsule without the file has an
// empty working memory.
func (a *tenant) workingMemory() (string, error) {
	b, err := vfs.ReadFile(a.n.fsys, filepath.Join(a.capsule(), filepath.FromSlash(manifest.WorkingMemoryPath)))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("node: working memory of %s: %w", a.id, err)
	}
	return string(b), nil
}

// WorkingMemory implements api.MemoryReader: the working memory of an
// agent this node holds or last held, with its size, digest and the cap
// its spec sets.
func (n *Node) WorkingMemory(ctx context.Context, id string) (api.WorkingMemory, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return api.WorkingMemory{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.removed() || !a.listed() {
		return api.WorkingMemory{}, fmt.Errorf("%w: agent %s is not on this node", api.ErrNotFound, id)
	}
	text, err := a.workingMemory()
	if err != nil {
		return api.WorkingMemory{}, err
	}
	spec, err := a.spec(a.capsule())
	if err != nil {
		return api.WorkingMemory{}, fmt.Errorf("node: working memory of %s: %w", id, err)
	}
	return api.WorkingMemory{Agent: id, Bytes: len(text), Limit: spec.WorkingMaxBytes(),
		Digest: string(digest.FromBytes([]byte(text))), Text: text}, nil
}

var _ api.MemoryReader = (*Node)(nil)
