package render

import "strings"

// WorkingMemoryHeader starts the instruction that carries the agent's
// working memory (FORMAT §6.4): the header, then the file's text as it is.
const WorkingMemoryHeader = "Working memory (your notes; edit them with the memory tool):\n"

// workingMemory returns the pinned instruction that carries t's working
// memory, or false when there is none to show: an empty or whitespace-only
// working memory renders no block.
func (b *builder) workingMemory() (Item, bool) {
	if strings.TrimSpace(b.t.WorkingMemory) == "" {
		return Item{}, false
	}
	text := WorkingMemoryHeader + b.t.WorkingMemory
	return Item{Kind: ItemInstruction, Role: "system", Text: text, Synthetic: "memory",
		tokens: b.cnt.count(text) + perMessage}, true
}

// pinMemory puts the working memory's instruction right after the leading
// instructions of items, before the first user or assistant item, so that
// an API with a single system slot carries it there, after the journal's
// instructions.
func pinMemory(items []Item, mem Item) []Item {
	n := 0
	for n < len(items) && items[n].Kind == ItemInstruction {
		n++
	}
	out := make([]Item, 0, len(items)+1)
	out = append(append(append(out, items[:n]...), mem), items[n:]...)
	return out
}
