package memory

import (
	"math"
	"slices"
)

// BM25 parameters (Robertson and Zaragoza's usual values).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// bm25 is an inverted index of the chunks' capsule-tok/1 tokens. It is
// never stored: it is rebuilt from the texts, which the journal and the
// working memory hold. Documents are the index's chunk numbers; a dead
// one (a replaced span of the working memory) is skipped and left out of
// the statistics.
type bm25 struct {
	terms    map[string]int32
	postings [][]posting
	lens     []int32
	live     []bool
	nLive    int
	lenLive  int64
	scratch  []int32
}

type posting struct {
	doc int32
	tf  int32
}

func newBM25() *bm25 { return &bm25{terms: map[string]int32{}} }

// add indexes text as the next document.
func (b *bm25) add(text string) {
	doc := int32(len(b.lens))
	ids := b.scratch[:0]
	Tokenize(text, func(tok []byte) {
		id, ok := b.terms[string(tok)]
		if !ok {
			id = int32(len(b.postings))
			b.terms[string(tok)] = id
			b.postings = append(b.postings, nil)
		}
		ids = append(ids, id)
	})
	slices.Sort(ids)
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] == ids[i] {
			j++
		}
		b.postings[ids[i]] = append(b.postings[ids[i]], posting{doc: doc, tf: int32(j - i)})
		i = j
	}
	b.scratch = ids
	b.lens = append(b.lens, int32(len(ids)))
	b.live = append(b.live, true)
	b.nLive++
	b.lenLive += int64(len(ids))
}

// kill removes a document from the results and the statistics.
func (b *bm25) kill(doc int) {
	if b.live[doc] {
		b.live[doc] = false
		b.nLive--
		b.lenLive -= int64(b.lens[doc])
	}
}

// scores adds each live document's BM25 score for the query's tokens to
// acc (indexed by document, all zero on entry) and returns the documents
// it touched, appended to touched.
func (b *bm25) scores(query string, acc []float64, touched []int32) []int32 {
	if b.nLive == 0 {
		return touched
	}
	avg := float64(b.lenLive) / float64(b.nLive)
	seen := map[int32]bool{}
	Tokenize(query, func(tok []byte) {
		id, ok := b.terms[string(tok)]
		if !ok || seen[id] {
			return
		}
		seen[id] = true
		ps := b.postings[id]
		df := 0
		for _, p := range ps {
			if b.live[p.doc] {
				df++
			}
		}
		idf := math.Log(1 + (float64(b.nLive)-float64(df)+0.5)/(float64(df)+0.5))
		for _, p := range ps {
			if !b.live[p.doc] {
				continue
			}
			tf := float64(p.tf)
			norm := bm25K1 * (1 - bm25B + bm25B*float64(b.lens[p.doc])/avg)
			if acc[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			acc[p.doc] += idf * tf * (bm25K1 + 1) / (tf + norm)
		}
	})
	return touched
}
