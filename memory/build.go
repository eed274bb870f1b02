package memory

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/agentcapsule/capsule/schema"
)

// How a Refresh brought an index up to date.
const (
	ModeUnchanged   = "unchanged"   // the index already reflected the corpus
	ModeIncremental = "incremental" // only the new texts were embedded
	ModeFull        = "full"        // every text was embedded
)

// Report says what a build did.
type Report struct {
	// Mode is ModeUnchanged, ModeIncremental or ModeFull.
	Mode string `json:"mode"`
	// Reason says why the stored index could not be kept as it was.
	Reason string `json:"reason,omitempty"`
	// Chunks is the number of chunks of the corpus.
	Chunks int `json:"chunks"`
	// Embedded is the number of texts the embedder was asked for.
	Embedded int `json:"embedded"`
	// Reused is the number of vectors taken from the stored index.
	Reused int `json:"reused"`
	// Failed lists the chunks the embedder gave no vector for.
	Failed []Failure `json:"failed,omitempty"`
}

// Failure is a chunk the embedder could not embed.
type Failure struct {
	Event string    `json:"event,omitempty"`
	Span  *[2]int64 `json:"span,omitempty"`
	Error string    `json:"error"`
}

// Source describes the chunk's source for people: an event id, with its
// span when it has one, or "working memory [a, b)".
func (f Failure) Source() string {
	return sourceString(f.Event, f.Span)
}

func sourceString(event string, span *[2]int64) string {
	var b strings.Builder
	if event == "" {
		b.WriteString("working memory")
	} else {
		b.WriteString(event)
	}
	if span != nil {
		fmt.Fprintf(&b, " [%d, %d)", span[0], span[1])
	}
	return b.String()
}

// Build embeds every chunk of corpus c with e. On an error, or when some
// text got no vector (ErrIncomplete, with the Report naming them), it
// returns no index: an index is whole or absent.
func Build(ctx context.Context, c *Corpus, e Embedder) (*Index, *Report, error) {
	return Refresh(ctx, nil, c, e)
}

// Refresh returns the index a clean build of corpus c with e gives,
// reusing the vectors of old (which may be nil, or decoded from a file and
// never trusted) when that is safe: old was built by an embedder with the
// same fingerprint, the journal holds every event of old's watermark (it
// only grew), and old's chunks are exactly the chunks of those events (and
// of the working memory, when its digest is unchanged), text digest for
// text digest. Then only new texts are embedded (ModeIncremental, or
// ModeUnchanged when there are none and the watermark is the same);
// otherwise every text is (ModeFull), with the Report's Reason saying why.
// Like Build it returns an index or nothing.
func Refresh(ctx context.Context, old *Index, c *Corpus, e Embedder) (*Index, *Report, error) {
	p, err := assess(old, c, e)
	if err != nil {
		return nil, nil, err
	}
	rep := p.rep
	vecs, failed, err := embedAll(ctx, e, p.meta.Dims, p.texts)
	if err != nil {
		return nil, rep, err
	}
	if len(failed) > 0 {
		rep.Failed = failures(p.chunks, p.todo, failed)
		return nil, rep, fmt.Errorf("%w: %d of %d (first: %s)", ErrIncomplete, len(failed), len(p.texts), rep.Failed[0].Source())
	}
	x := newIndex(p.meta, p.fp, p.wm, len(p.chunks))
	byChunk := make(map[int][]float32, len(p.todo))
	for j, i := range p.todo {
		byChunk[i] = vecs[j]
	}
	for i, ch := range p.chunks {
		if o, ok := p.reuse[i]; ok {
			x.pushFrom(ch, p.sums[i], old, o)
			continue
		}
		x.push(ch, p.sums[i], byChunk[i])
	}
	return x, rep, nil
}

// assessment is what a Refresh would do, before it embeds anything.
type assessment struct {
	meta   schema.Embedder
	fp     string
	wm     Watermark
	chunks []Chunk
	sums   []string
	reuse  map[int]int // chunk number -> old chunk number
	todo   []int       // the chunks to embed
	texts  []string    // their texts
	rep    *Report
}

// assess plans a Refresh of old against corpus c with e.
func assess(old *Index, c *Corpus, e Embedder) (*assessment, error) {
	meta, fp, err := Meta(e)
	if err != nil {
		return nil, err
	}
	p := &assessment{meta: meta, fp: fp, wm: c.Watermark(), chunks: c.Chunks()}
	p.sums = digests(p.chunks)
	p.rep = &Report{Chunks: len(p.chunks)}
	p.reuse = plan(old, fp, c, p.wm, p.chunks, p.sums, p.rep)
	for i := range p.chunks {
		if _, ok := p.reuse[i]; !ok {
			p.todo = append(p.todo, i)
			p.texts = append(p.texts, p.chunks[i].Text)
		}
	}
	p.rep.Embedded, p.rep.Reused = len(p.texts), len(p.reuse)
	if p.rep.Mode == ModeIncremental && len(p.texts) == 0 && old.wm.Equal(p.wm) {
		p.rep.Mode = ModeUnchanged
	}
	return p, nil
}

// plan decides what of old may be reused for chunks (chunk number → old
// chunk number) and sets rep's Mode and Reason.
func plan(old *Index, fp string, c *Corpus, wm Watermark, chunks []Chunk, sums []string, rep *Report) map[int]int {
	rep.Mode = ModeFull
	switch {
	case old == nil:
		rep.Reason = "no stored index"
		return nil
	case old.fp != fp:
		rep.Reason = fmt.Sprintf("the embedder changed (fingerprint %s, the index has %s)", short(fp), short(old.fp))
		return nil
	case !c.grewFrom(old.wm):
		rep.Reason = "the journal does not hold the events the index's watermark names (rewritten, truncated or replaced)"
		return nil
	}
	reuse := map[int]int{}
	covered := 0
	for i := range chunks {
		ch := &chunks[i]
		o, found := old.byKey[ch.key()]
		same := found && old.docs[o].digest == sums[i]
		if covers(old.wm, wm, ch) {
			if !same {
				rep.Reason = "the index's chunks do not match the journal its watermark names (" + sourceString(ch.Event, spanOf(ch)) + ")"
				return nil
			}
			covered++
		}
		if same {
			reuse[i] = o
		}
	}
	if covered != old.countCovered(wm) {
		rep.Reason = "the index holds chunks the journal its watermark names does not give"
		return nil
	}
	rep.Mode = ModeIncremental
	return reuse
}

// digests returns the text digest of each chunk, hashing on every core.
func digests(chunks []Chunk) []string {
	out := make([]string, len(chunks))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(chunks)/1024))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := len(chunks)*w/workers, len(chunks)*(w+1)/workers
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				out[i] = textDigest(chunks[i].Text)
			}
		})
	}
	wg.Wait()
	return out
}

// covers reports whether chunk ch must already be in an index with
// watermark ow, for a corpus with watermark now.
func covers(ow, now Watermark, ch *Chunk) bool {
	if ch.Event == "" {
		return ow.WorkingMemory == now.WorkingMemory
	}
	h, ok := ow.Heads[ch.machine]
	return ok && ch.seq <= h.Seq
}

// countCovered counts the live chunks the watermark check compares: all
// of them, but the working memory's when it changed since.
func (x *Index) countCovered(now Watermark) int {
	n := 0
	for i := range x.docs {
		if d := &x.docs[i]; d.live && (d.Event != "" || x.wm.WorkingMemory == now.WorkingMemory) {
			n++
		}
	}
	return n
}

func spanOf(ch *Chunk) *[2]int64 {
	if !ch.HasSpan {
		return nil
	}
	s := ch.Span
	return &s
}

func failures(chunks []Chunk, todo []int, failed map[int]error) []Failure {
	keys := make([]int, 0, len(failed))
	for j := range failed {
		keys = append(keys, j)
	}
	sort.Ints(keys)
	out := make([]Failure, 0, len(keys))
	for _, j := range keys {
		ch := &chunks[todo[j]]
		out = append(out, Failure{Event: ch.Event, Span: spanOf(ch), Error: failed[j].Error()})
	}
	return out
}

func short(fp string) string {
	if len(fp) > 19 {
		return fp[:19] + "…"
	}
	return fp
}
