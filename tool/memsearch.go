package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// MemorySearch is the name of the tool that searches the agent's memory
// index (package memory): everything it has seen, by meaning.
const MemorySearch = "memory_search"

// Recall searches the agent's memory for query and returns at most k hits,
// best first (Options.Recall; the node's memory index).
type Recall func(ctx context.Context, query string, k int) ([]RecallHit, error)

// RecallHit is one hit of a memory search.
type RecallHit struct {
	// Score is the hit's fused score: higher is better, comparable only
	// within one search.
	Score float64
	// Source names where the text comes from: "event <id>" or "working memory".
	Source string
	// Snippet is the start of the chunk's text.
	Snippet string
}

// Bounds of a memory search's k.
const (
	defaultRecallK = 8
	maxRecallK     = 50
)

const memorySearchParams = `{"type":"object","properties":{` +
	`"query":{"type":"string","minLength":1,"description":"what to look for, in your own words"},` +
	`"k":{"type":"integer","minimum":1,"maximum":50,"description":"how many hits to return (default 8)"}},` +
	`"required":["query"],"additionalProperties":false}`

const memorySearchDescription = "Search everything you have seen in this conversation (user and assistant " +
	"messages, tool results) and your working memory by meaning, not only by exact words: the best " +
	"matching passages come back best first, each with the event it comes from. Use it to recall a detail " +
	"from long ago that is no longer in view."

type memorySearchArgs struct {
	Query string `json:"query"`
	K     int    `json:"k"`
}

// memorySearch runs Options.Recall and lists the hits for the model.
func (w *Workspace) memorySearch(ctx context.Context, raw json.RawMessage) Result {
	var a memorySearchArgs
	if msg := decode(MemorySearch, raw, &a); msg != "" {
		return failf("%s", msg)
	}
	k := a.K
	if k == 0 {
		k = defaultRecallK
	}
	k = min(k, maxRecallK)
	hits, err := w.opts.Recall(ctx, a.Query, k)
	if err != nil {
		return failf("%s: %v", MemorySearch, err)
	}
	if len(hits) == 0 {
		return Result{Content: "no passage of your memory matches " + fmt.Sprintf("%q", short(a.Query, 200))}
	}
	var b strings.Builder
	for i, h := range hits {
		fmt.Fprintf(&b, "%d. (%s, score %.4f) %s\n", i+1, h.Source, h.Score, h.Snippet)
	}
	return Result{Content: strings.TrimSuffix(b.String(), "\n")}
}
