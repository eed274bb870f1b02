package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/schema"
)

// Sentinel errors callers branch on.
var (
	// ErrIncomplete is a build in which some texts got no vector: nothing
	// is replaced, and the Report names them.
	ErrIncomplete = errors.New("memory: some texts could not be embedded")
	// ErrFingerprint is a search with an embedder other than the index's.
	ErrFingerprint = errors.New("memory: the index was built by another embedder")
)

// embedBatch is how many texts one Embed call gets at most.
const embedBatch = 256

// Index is a memory index in memory: the chunks of a corpus, their vectors
// and an inverted index of their tokens. Build, Refresh and Decode make one;
// Add keeps it current as the journal grows. An Index is not safe for
// concurrent use.
type Index struct {
	meta   schema.Embedder
	fp     string
	wm     Watermark
	docs   []doc
	byKey  map[chunkKey]int
	vec    vectors
	bm     *bm25
	live   int
	wmDocs []int // the live chunks of the working memory

	lexAcc     []float64 // per-query scratch of lexical, all zero between queries
	lexTouched []int32
	vecScores  []float64
}

// doc is one chunk of the index with its text digest.
type doc struct {
	Chunk
	digest string
	live   bool
}

// chunkKey names a chunk's source.
type chunkKey struct {
	event   string
	span    [2]int64
	hasSpan bool
}

func (c *Chunk) key() chunkKey { return chunkKey{c.Event, c.Span, c.HasSpan} }

// compareKeys is the order of chunks in the file: event chunks by event
// id, then span (a chunk without a span first), then the working memory's
// chunks by span.
func compareKeys(a, b chunkKey) int {
	if (a.event == "") != (b.event == "") {
		if a.event == "" {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(a.event, b.event); c != 0 {
		return c
	}
	if a.hasSpan != b.hasSpan {
		if !a.hasSpan {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.span[0], b.span[0]); c != 0 {
		return c
	}
	return cmp.Compare(a.span[1], b.span[1])
}

// Meta returns what the index's fingerprint covers, with its display name.
func (x *Index) Meta() schema.Embedder { return x.meta }

// Fingerprint returns the index's embedder fingerprint.
func (x *Index) Fingerprint() string { return x.fp }

// Watermark returns the source the index reflects.
func (x *Index) Watermark() Watermark { return x.wm }

// Len returns the number of chunks.
func (x *Index) Len() int { return x.live }

// Meta returns the index metadata an embedder gives: its identity, the
// data type the index stores its vectors in, and capsule-chunk/1.
func Meta(e Embedder) (schema.Embedder, string, error) {
	id := e.Identity()
	m := schema.Embedder{Name: id.Name, Dims: id.Dims, DType: DTypeFloat16, Normalization: "none",
		Model: id.Model, Tokenizer: id.Tokenizer, Chunker: ChunkerName}
	if id.Normalized {
		m.DType, m.Normalization = DTypeInt8, "l2"
	}
	fp, err := m.Fingerprint()
	if err != nil {
		return m, "", fmt.Errorf("memory: embedder %q: %w", id.Name, err)
	}
	return m, fp, nil
}

func newIndex(meta schema.Embedder, fp string, wm Watermark, n int) *Index {
	return &Index{meta: meta, fp: fp, wm: wm, byKey: make(map[chunkKey]int, n),
		vec: newVectors(meta.Dims, meta.DType, n), bm: newBM25()}
}

// push appends a chunk and its vector as the embedder computed it.
func (x *Index) push(c Chunk, sum string, vec []float32) {
	x.vec.add(vec)
	x.appendDoc(c, sum)
}

// appendDoc records chunk c, whose vector was just appended.
func (x *Index) appendDoc(c Chunk, sum string) {
	x.byKey[c.key()] = len(x.docs)
	if c.Event == "" {
		x.wmDocs = append(x.wmDocs, len(x.docs))
	}
	x.docs = append(x.docs, doc{Chunk: c, digest: sum, live: true})
	if x.bm != nil {
		x.bm.add(c.Text)
	}
	x.live++
}

// kill drops chunk i from searches and from the file.
func (x *Index) kill(i int) {
	if x.docs[i].live {
		x.docs[i].live = false
		delete(x.byKey, x.docs[i].key())
		x.bm.kill(i)
		x.live--
		if x.docs[i].Event == "" {
			x.wmDocs = slices.DeleteFunc(x.wmDocs, func(j int) bool { return j == i })
		}
	}
}

// sorted returns the live chunk numbers in file order.
func (x *Index) sorted() []int {
	out := make([]int, 0, x.live)
	for i := range x.docs {
		if x.docs[i].live {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return compareKeys(x.docs[a].key(), x.docs[b].key()) })
	return out
}

// textDigest is the digest the file stores for a chunk's text.
func textDigest(text string) string { return digest.FromString(text).String() }

// Chunks returns every chunk of a corpus in file order.
func (c *Corpus) Chunks() []Chunk {
	var out []Chunk
	for _, t := range c.texts {
		for _, ch := range EventChunks(t.ID, t.Text) {
			ch.machine, ch.seq = t.Machine, t.Seq
			out = append(out, ch)
		}
	}
	out = append(out, WorkingMemoryChunks(c.wm)...)
	slices.SortFunc(out, func(a, b Chunk) int { return compareKeys(a.key(), b.key()) })
	return slices.CompactFunc(out, func(a, b Chunk) bool { return a.key() == b.key() }) // an event repeated in a broken journal
}

// embedAll computes the vectors of texts in batches. A batch that fails
// outright stops it; texts an *EmbedError names are collected in failed
// (by index into texts) and the rest go on.
func embedAll(ctx context.Context, e Embedder, dims int, texts []string) ([][]float32, map[int]error, error) {
	out := make([][]float32, len(texts))
	failed := map[int]error{}
	for lo := 0; lo < len(texts); lo += embedBatch {
		hi := min(lo+embedBatch, len(texts))
		vs, err := e.Embed(ctx, texts[lo:hi])
		var ee *EmbedError
		switch {
		case errors.As(err, &ee):
			for i, why := range ee.Failed {
				failed[lo+i] = why
			}
			if vs == nil { // every text refused, no vectors at all
				vs = make([][]float32, hi-lo)
			}
		case err != nil:
			return nil, nil, fmt.Errorf("memory: embed texts %d to %d of %d: %w", lo+1, hi, len(texts), err)
		}
		if len(vs) != hi-lo {
			return nil, nil, fmt.Errorf("memory: embed: %d vectors for %d texts", len(vs), hi-lo)
		}
		for i, v := range vs {
			if _, bad := failed[lo+i]; bad {
				continue
			}
			if len(v) != dims {
				failed[lo+i] = fmt.Errorf("a vector of %d values, the embedder says %d", len(v), dims)
				continue
			}
			out[lo+i] = v
		}
	}
	return out, failed, nil
}

// cloneHeads copies a watermark so an index never shares it with a corpus.
func cloneHeads(w Watermark) Watermark {
	w.Heads = maps.Clone(w.Heads)
	return w
}

// pushFrom appends a chunk with the vector of chunk o of old (same dtype and dims).
func (x *Index) pushFrom(c Chunk, sum string, old *Index, o int) {
	d := x.vec.dims
	if x.vec.dtype == DTypeInt8 {
		x.vec.q = append(x.vec.q, old.vec.q[o*d:(o+1)*d]...)
	} else {
		x.vec.f = append(x.vec.f, old.vec.f[o*d:(o+1)*d]...)
	}
	x.appendDoc(c, sum)
}
