package tool

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// memory_search is offered only with a Recall; it passes the query and k
// (8 by default, at most 50) and lists the hits best first with their
// source; no hit and a failed search say so.
func TestMemorySearch(t *testing.T) {
	plain := newFixture(t, Options{}, nil)
	for _, tl := range plain.w.Tools() {
		if tl.Name == MemorySearch {
			t.Error("memory_search offered without a Recall")
		}
	}
	plain.fails(t, MemorySearch, `{"query":"x"}`, `unknown tool "memory_search"`)

	var gotQuery string
	var gotK int
	recall := func(_ context.Context, q string, k int) ([]RecallHit, error) {
		gotQuery, gotK = q, k
		switch q {
		case "nothing":
			return nil, nil
		case "broken":
			return nil, errors.New("the index cannot be read")
		}
		return []RecallHit{{Score: 0.18, Source: "event sha256:aa", Snippet: "the deploy key rotates on Mondays"},
			{Score: 0.09, Source: "working memory", Snippet: "- ask about the key"}}, nil
	}
	f := newFixture(t, Options{Recall: recall}, nil)
	offered := false
	for _, tl := range f.w.Tools() {
		offered = offered || tl.Name == MemorySearch
	}
	if !offered {
		t.Fatal("memory_search not offered with a Recall")
	}
	got := f.ok(t, MemorySearch, `{"query":"when does the key rotate"}`)
	want := "1. (event sha256:aa, score 0.1800) the deploy key rotates on Mondays\n2. (working memory, score 0.0900) - ask about the key"
	if got != want || gotQuery != "when does the key rotate" || gotK != defaultRecallK {
		t.Errorf("search: %q (query %q, k %d), want %q with k %d", got, gotQuery, gotK, want, defaultRecallK)
	}
	f.ok(t, MemorySearch, `{"query":"q","k":50}`)
	if gotK != 50 {
		t.Errorf("k = %d, want 50", gotK)
	}
	f.fails(t, MemorySearch, `{"query":"q","k":51}`, "invalid arguments")
	f.fails(t, MemorySearch, `{"query":""}`, "invalid arguments")
	if got := f.ok(t, MemorySearch, `{"query":"nothing"}`); !strings.Contains(got, "no passage") {
		t.Errorf("no hit: %q", got)
	}
	f.fails(t, MemorySearch, `{"query":"broken"}`, "the index cannot be read")
}
