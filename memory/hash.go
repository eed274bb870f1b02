package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"runtime"
	"sync"
	"unicode/utf8"
)

// HashName is the display name of the default embedder.
const HashName = "capsule-hash"

// HashDims is the length of the default embedder's vectors.
const HashDims = 256

// hashParams names every choice that changes a Hash vector; its digest is
// the embedder's Model, so a change here changes the index's fingerprint.
const hashParams = "capsule-hash/1 fnv1a64 dims=256 word=1 bigram=0.5 char3,4=0.6/sqrt(n) stop=en33 sqrt-damp l2"

// stopwords are skipped by the word and bigram features of Hash: they say
// little about what a text is about and would otherwise dominate it.
var stopwords = map[string]bool{}

func init() {
	for _, w := range []string{"a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from",
		"how", "in", "is", "it", "of", "on", "or", "that", "the", "this", "to", "was", "we", "were", "what",
		"when", "which", "who", "why", "with"} {
		stopwords[w] = true
	}
}

// Hash is the default embedder: offline, deterministic and free. It maps
// the capsule-tok/1 tokens of a text to a 256-dimensional signed
// feature-hashing vector: each token that is not a stopword (weight 1),
// each pair of adjacent such tokens (0.5), and the character 3- and
// 4-grams of each such token framed by "^" and "$" (0.6 in total per
// token, split evenly over its n-grams, so morphological variants and
// abbreviations share dimensions). A feature's FNV-1a 64 hash picks the
// dimension (hash mod 256) and the sign (its top bit). Each coordinate is
// damped to sign·sqrt(|x|), then the vector is L2-normalised; a text with
// no feature gets the zero vector. The zero value is ready to use.
type Hash struct{}

// Identity describes Hash's vectors; Model is the sha256 of its parameters.
func (Hash) Identity() Identity {
	sum := sha256.Sum256([]byte(hashParams))
	return Identity{Name: HashName, Dims: HashDims, Model: "sha256:" + hex.EncodeToString(sum[:]),
		Tokenizer: TokenizerName, Normalized: true}
}

// Embed returns one vector per text; it never fails but when ctx is done.
// Long batches are split over every core.
func (h Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(texts)/64))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := len(texts)*w/workers, len(texts)*(w+1)/workers
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				out[i] = HashVector(texts[i])
			}
		})
	}
	wg.Wait()
	return out, nil
}

// HashVector is Hash's vector of one text.
func HashVector(text string) []float32 {
	var f featurizer
	Tokenize(text, f.token)
	return finish(&f.acc)
}

// featurizer accumulates a text's features, reusing its buffers.
type featurizer struct {
	acc    [HashDims]float64
	prev   []byte // the previous token that was not a stopword, or empty
	framed []byte // "^" + token + "$"
	starts []int  // rune starts in framed, and its length
}

func (f *featurizer) token(tok []byte) {
	if stopwords[string(tok)] {
		f.prev = f.prev[:0]
		return
	}
	f.add(hashOf("w", nil, tok), 1)
	if len(f.prev) > 0 {
		f.add(hashOf("b", f.prev, tok), 0.5)
	}
	f.prev = append(f.prev[:0], tok...)
	f.grams(tok)
}

// grams adds the character 3- and 4-grams of "^tok$", in runes.
func (f *featurizer) grams(tok []byte) {
	f.framed = append(append(append(f.framed[:0], '^'), tok...), '$')
	f.starts = f.starts[:0]
	for i := range len(f.framed) {
		if utf8.RuneStart(f.framed[i]) {
			f.starts = append(f.starts, i)
		}
	}
	runes := len(f.starts)
	f.starts = append(f.starts, len(f.framed))
	n := max(0, runes-2) + max(0, runes-3)
	if n == 0 {
		return
	}
	w := 0.6 / math.Sqrt(float64(n))
	for _, g := range [...]struct {
		kind string
		n    int
	}{{"c3", 3}, {"c4", 4}} {
		for i := 0; i+g.n <= runes; i++ {
			f.add(hashOf(g.kind, nil, f.framed[f.starts[i]:f.starts[i+g.n]]), w)
		}
	}
}

// hashOf is FNV-1a 64 of kind, ':', then a and " " and b when a is not
// empty, else b.
func hashOf(kind string, a, b []byte) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(kind); i++ {
		h = (h ^ uint64(kind[i])) * 1099511628211
	}
	h = (h ^ ':') * 1099511628211
	if len(a) > 0 {
		for _, c := range a {
			h = (h ^ uint64(c)) * 1099511628211
		}
		h = (h ^ ' ') * 1099511628211
	}
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// add puts weight w of a feature with hash h in its dimension, signed by
// the hash's top bit.
func (f *featurizer) add(h uint64, w float64) {
	if h>>63 == 1 {
		w = -w
	}
	f.acc[h%HashDims] += w
}

func finish(acc *[HashDims]float64) []float32 {
	var norm float64
	for i, x := range acc {
		d := math.Sqrt(math.Abs(x))
		if x < 0 {
			d = -d
		}
		acc[i] = d
		norm += d * d
	}
	v := make([]float32, HashDims)
	if norm == 0 {
		return v
	}
	norm = math.Sqrt(norm)
	for i, x := range acc {
		v[i] = float32(x / norm)
	}
	return v
}
