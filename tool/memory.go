package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
)

type memoryArgs struct {
	Action  string  `json:"action"`
	Content *string `json:"content"`
}

// memory reads or rewrites the working memory file.
func (w *Workspace) memory(_ context.Context, raw json.RawMessage) Result {
	var a memoryArgs
	if msg := decode(Memory, raw, &a); msg != "" {
		return failf("%s", msg)
	}
	if a.Action == "read" {
		return w.readMemory()
	}
	if a.Content == nil {
		return failf("%s: action \"write\" needs content, the complete new working memory", Memory)
	}
	if len(*a.Content) > MaxMemoryBytes {
		return failf("%s: content is %d bytes, over the %d-byte limit of working memory; keep only what matters", Memory, len(*a.Content), MaxMemoryBytes)
	}
	if err := atomicWrite(w.memRoot, w.memName, []byte(*a.Content), 0o644); err != nil {
		return failf("%s: write: %v", Memory, err)
	}
	return Result{Content: fmt.Sprintf("working memory rewritten (%d bytes)", len(*a.Content))}
}

func (w *Workspace) readMemory() Result {
	b, err := w.memRoot.ReadFile(w.memName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Result{Content: "(working memory is empty)"}
	case err != nil:
		return failf("%s: read: %v", Memory, err)
	case len(b) == 0:
		return Result{Content: "(working memory is empty)"}
	}
	return Result{Content: string(b)}
}
