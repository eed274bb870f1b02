package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// memoryParams is the memory tool's argument schema.
const memoryParams = `{"type":"object","properties":{` +
	`"action":{"type":"string","enum":["read","replace","append"],"description":"read, replace or append to the working memory"},` +
	`"content":{"type":"string","description":"replace: the complete new working memory; append: the text to add at the end"},` +
	`"old":{"type":"string","minLength":1,"description":"replace: the exact text to replace, which must occur exactly once"},` +
	`"new":{"type":"string","description":"replace: the text to put in the place of old"}},` +
	`"required":["action"],"additionalProperties":false}`

// memoryDescription is the memory tool's description for a working
// memory of at most limit bytes (FORMAT §6.4).
func memoryDescription(limit int) string {
	return "Your working memory: a Markdown file of notes kept with you across conversations and moves, and " +
		"shown to you in every request right after the instructions, under \"Working memory\". " +
		"action \"read\" returns it. action \"replace\" with content replaces all of it with content; " +
		"with old and new instead, it replaces the one occurrence of old (the exact text, whitespace included, " +
		"which must occur exactly once) with new. action \"append\" adds content at the end, on a new line. " +
		fmt.Sprintf("It holds at most %d bytes: a change that would make it longer is refused and changes nothing, ", limit) +
		"so keep it short and replace notes that no longer matter."
}

type memoryArgs struct {
	Action  string  `json:"action"`
	Content *string `json:"content"`
	Old     *string `json:"old"`
	New     *string `json:"new"`
}

// memory reads, replaces or appends to the working memory file.
func (w *Workspace) memory(_ context.Context, raw json.RawMessage) Result {
	var a memoryArgs
	if msg := decode(Memory, raw, &a); msg != "" {
		return failf("%s", msg)
	}
	if a.Action == "read" {
		return w.readMemory()
	}
	old, err := w.loadMemory()
	if err != nil {
		return failf("%s: read: %v", Memory, err)
	}
	next, done, msg := a.apply(old)
	if msg != "" {
		return failf("%s: %s", Memory, msg)
	}
	if len(next) > w.opts.MaxMemoryBytes {
		return failf("%s: %s refused: the working memory would be %d bytes, over its limit of %d bytes "+
			"(the environment spec's memory.working_max_bytes); nothing was changed. Make room first: replace it "+
			"with a shorter text that keeps only what still matters", Memory, a.Action, len(next), w.opts.MaxMemoryBytes)
	}
	if err := atomicWrite(w.memRoot, w.memName, []byte(next), 0o644); err != nil {
		return failf("%s: write: %v", Memory, err)
	}
	return Result{Content: fmt.Sprintf("%s (%d bytes now)", done, len(next))}
}

// apply returns the working memory after a replace or an append of old,
// and what was done; or a message saying why the call is refused.
func (a *memoryArgs) apply(old string) (next, done, msg string) {
	switch {
	case a.Action == "append" && (a.Content == nil || *a.Content == "" || a.Old != nil || a.New != nil):
		return "", "", `action "append" needs content (the text to add) and takes no old or new`
	case a.Action == "append":
		if old != "" && !strings.HasSuffix(old, "\n") {
			old += "\n"
		}
		return old + *a.Content, fmt.Sprintf("appended %d bytes to the working memory", len(*a.Content)), ""
	case a.Content != nil && (a.Old != nil || a.New != nil):
		return "", "", `action "replace" takes either content (the whole new text) or old and new, not both`
	case a.Content != nil:
		return *a.Content, "working memory replaced", ""
	case a.Old == nil || a.New == nil:
		return "", "", `action "replace" needs content (the whole new text), or old and new (an exact-once replacement)`
	}
	switch n := strings.Count(old, *a.Old); n {
	case 0:
		return "", "", "old does not occur in the working memory; read it and copy the text exactly, whitespace included"
	case 1:
		return strings.Replace(old, *a.Old, *a.New, 1), "replaced 1 occurrence in the working memory", ""
	default:
		return "", "", fmt.Sprintf("old occurs %d times in the working memory; include more of the surrounding text so that it occurs once", n)
	}
}

// loadMemory returns the working memory, "" when the file does not exist.
func (w *Workspace) loadMemory() (string, error) {
	b, err := w.memRoot.ReadFile(w.memName)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

func (w *Workspace) readMemory() Result {
	b, err := w.loadMemory()
	switch {
	case err != nil:
		return failf("%s: read: %v", Memory, err)
	case b == "":
		return Result{Content: "(working memory is empty)"}
	}
	return Result{Content: b}
}
