package memory

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Ranking is what a search ranks by.
type Ranking int

// The rankings. Hybrid is the default; the others are its parts, for
// measuring it.
const (
	Hybrid  Ranking = iota // reciprocal rank fusion of Lexical and Vector
	Lexical                // BM25 over capsule-tok/1
	Vector                 // cosine of the embedder's vectors
)

// Fusion parameters: RRF's constant, and how deep each part's ranking goes.
// rrfK is 10 rather than the customary 60: on the labelled set (three
// seeds) a smaller constant, which lets a part's top ranks count for more,
// gave the best recall@10 with the two parts weighted equally.
const (
	rrfK      = 10
	fuseDepth = 100
)

// snippetRunes bounds a hit's snippet.
const snippetRunes = 160

// Hit is one search result.
type Hit struct {
	// Score is the fused score (Hybrid), the BM25 score (Lexical) or the
	// cosine (Vector).
	Score float64 `json:"score"`
	// Event is the source event's id, "" for the working memory.
	Event string `json:"event,omitempty"`
	// Span is the chunk's span of the event's text or of the working memory.
	Span *[2]int64 `json:"span,omitempty"`
	// Snippet is the start of the chunk's text, white space collapsed.
	Snippet string `json:"snippet"`
}

// Search returns the k best chunks for query by reciprocal rank fusion of
// BM25 and the vectors (each ranking to depth max(k, 100); a chunk scores
// the sum of 1/(10+rank) over the rankings it is in). e must be the
// index's embedder: a query never mixes fingerprints (ErrFingerprint).
func (x *Index) Search(ctx context.Context, e Embedder, query string, k int) ([]Hit, error) {
	return x.SearchBy(ctx, e, query, k, Hybrid)
}

// SearchBy is Search with a choice of ranking.
func (x *Index) SearchBy(ctx context.Context, e Embedder, query string, k int, r Ranking) ([]Hit, error) {
	if x.bm == nil {
		return nil, fmt.Errorf("memory: search: the index was not refreshed from its corpus")
	}
	if k < 1 || x.live == 0 {
		return []Hit{}, nil
	}
	depth := max(k, fuseDepth)
	var lex, vec []ranked
	if r != Vector {
		lex = x.lexical(query, depth)
	}
	if r != Lexical {
		var err error
		if vec, err = x.vector(ctx, e, query, depth); err != nil {
			return nil, err
		}
	}
	var out []ranked
	switch r {
	case Lexical:
		out = lex
	case Vector:
		out = vec
	default:
		out = x.fuse(lex, vec)
	}
	return x.hits(out[:min(k, len(out))]), nil
}

// ranked is a chunk number with its score.
type ranked struct {
	doc   int
	score float64
}

func (x *Index) lexical(query string, depth int) []ranked {
	if len(x.lexAcc) < len(x.docs) {
		x.lexAcc = make([]float64, len(x.docs))
	}
	acc := x.lexAcc
	touched := x.bm.scores(query, acc, x.lexTouched[:0])
	h := &rankHeap{x: x}
	for _, d := range touched {
		h.offer(ranked{int(d), acc[d]}, depth)
		acc[d] = 0 // ready for the next query
	}
	x.lexTouched = touched
	return h.sorted()
}

func (x *Index) vector(ctx context.Context, e Embedder, query string, depth int) ([]ranked, error) {
	if _, fp, err := Meta(e); err != nil || fp != x.fp {
		return nil, fmt.Errorf("%w: the index has %s", ErrFingerprint, short(x.fp))
	}
	vs, err := e.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("memory: embed the query: %w", err)
	}
	if len(vs) != 1 || len(vs[0]) != x.meta.Dims {
		return nil, fmt.Errorf("memory: embed the query: no vector of %d values", x.meta.Dims)
	}
	scores := x.vec.scoreAll(x.vec.prepare(vs[0]), len(x.docs), x.vecScores)
	x.vecScores = scores
	return x.top(depth, func(i int) (float64, bool) { return scores[i], true }), nil
}

// top returns the n best live chunks by score, ties broken by source order.
func (x *Index) top(n int, score func(i int) (float64, bool)) []ranked {
	h := &rankHeap{x: x}
	for i := range x.docs {
		if !x.docs[i].live {
			continue
		}
		if s, ok := score(i); ok {
			h.offer(ranked{i, s}, n)
		}
	}
	return h.sorted()
}

// offer keeps r if it is among the n best so far.
func (h *rankHeap) offer(r ranked, n int) {
	if h.Len() < n {
		heap.Push(h, r)
	} else if h.x.better(r, h.rs[0]) {
		h.rs[0] = r
		heap.Fix(h, 0)
	}
}

// sorted returns the kept results, best first.
func (h *rankHeap) sorted() []ranked {
	slices.SortFunc(h.rs, func(a, b ranked) int {
		if h.x.better(a, b) {
			return -1
		}
		return 1
	})
	return h.rs
}

// better orders results: higher score, then earlier source.
func (x *Index) better(a, b ranked) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return compareKeys(x.docs[a.doc].key(), x.docs[b.doc].key()) < 0
}

// rankHeap is a min-heap of the best results so far (the worst on top).
type rankHeap struct {
	x  *Index
	rs []ranked
}

func (h *rankHeap) Len() int           { return len(h.rs) }
func (h *rankHeap) Less(i, j int) bool { return h.x.better(h.rs[j], h.rs[i]) }
func (h *rankHeap) Swap(i, j int)      { h.rs[i], h.rs[j] = h.rs[j], h.rs[i] }
func (h *rankHeap) Push(v any)         { h.rs = append(h.rs, v.(ranked)) }
func (h *rankHeap) Pop() any {
	v := h.rs[len(h.rs)-1]
	h.rs = h.rs[:len(h.rs)-1]
	return v
}

// fuse combines rankings by reciprocal rank fusion.
func (x *Index) fuse(lists ...[]ranked) []ranked {
	score := map[int]float64{}
	for _, l := range lists {
		for rank, r := range l {
			score[r.doc] += 1 / float64(rrfK+rank+1)
		}
	}
	out := make([]ranked, 0, len(score))
	for d, s := range score {
		out = append(out, ranked{d, s})
	}
	slices.SortFunc(out, func(a, b ranked) int {
		if x.better(a, b) {
			return -1
		}
		return 1
	})
	return out
}

func (x *Index) hits(rs []ranked) []Hit {
	out := make([]Hit, len(rs))
	for i, r := range rs {
		d := &x.docs[r.doc]
		out[i] = Hit{Score: r.score, Event: d.Event, Span: spanOf(&d.Chunk), Snippet: Snippet(d.Text)}
	}
	return out
}

// Snippet is the first 160 runes of text with runs of white space made one
// space, and "…" when it was cut.
func Snippet(text string) string {
	s := strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(s) <= snippetRunes {
		return s
	}
	r := []rune(s)
	return string(r[:snippetRunes]) + "…"
}
