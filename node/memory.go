package node

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

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
