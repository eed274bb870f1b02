package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strconv"
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
func (h Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = HashVector(t)
	}
	return out, nil
}

// HashVector is Hash's vector of one text.
func HashVector(text string) []float32 {
	var acc [HashDims]float64
	var prev string
	Tokenize(text, func(tok []byte) {
		if stopwords[string(tok)] {
			prev = ""
			return
		}
		s := string(tok)
		addFeature(&acc, "w", s, 1)
		if prev != "" {
			addFeature(&acc, "b", prev+" "+s, 0.5)
		}
		prev = s
		addGrams(&acc, s)
	})
	return finish(&acc)
}

// addGrams adds the character 3- and 4-grams of "^tok$", in runes.
func addGrams(acc *[HashDims]float64, tok string) {
	rs := []rune("^" + tok + "$")
	n := 0
	for _, g := range []int{3, 4} {
		n += max(0, len(rs)-g+1)
	}
	if n == 0 {
		return
	}
	w := 0.6 / math.Sqrt(float64(n))
	for _, g := range []int{3, 4} {
		for i := 0; i+g <= len(rs); i++ {
			addFeature(acc, "c"+strconv.Itoa(g), string(rs[i:i+g]), w)
		}
	}
}

func addFeature(acc *[HashDims]float64, kind, s string, w float64) {
	h := uint64(14695981039346656037)
	for i := 0; i < len(kind); i++ {
		h = (h ^ uint64(kind[i])) * 1099511628211
	}
	h = (h ^ ':') * 1099511628211
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	if h>>63 == 1 {
		w = -w
	}
	acc[h%HashDims] += w
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
