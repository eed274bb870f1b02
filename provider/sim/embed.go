package sim

import (
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// The simulator's embedding model. Like its chat models it is a
// deterministic program, not a language model: feature hashing of the
// text's lower-cased words and word pairs, seeded by the model name and
// the task type, L2-normalised. The same text, model, task type and
// dimensions give the same vector bytes on every machine.
const (
	// Embed is the embedding model every embeddings endpoint serves.
	Embed = "capsule-sim/embed"
	// EmbedDims is its native (and default) vector length, and the most
	// dimensions a request may ask for.
	EmbedDims = 768
	// EmbedContext is its context length in the simulator's tokens (a
	// quarter of the bytes, rounded up): longer texts are cut to it, or
	// refused where the request asks not to truncate (Ollama's
	// "truncate": false).
	EmbedContext = 8192
)

// EmbedModels lists the embedding models the simulator serves.
var EmbedModels = []string{Embed}

func isEmbedModel(m string) bool {
	for _, x := range EmbedModels {
		if x == m {
			return true
		}
	}
	return false
}

// Vector is the simulator's embedding of text by model for a task type
// ("" for none) at dims dimensions (1..EmbedDims): each feature adds ±1
// to the component its hash picks; the result is L2-normalised. A text
// with no features, or whose features cancel out, gets a single 1 in the
// component picked by the hash of the whole text.
func Vector(model, task, text string, dims int) []float32 {
	counts := make([]int64, dims)
	nonzero := false
	for _, f := range features(text) {
		i, sign := bucket(model, task, f, dims)
		counts[i] += sign
	}
	var sum int64
	for _, c := range counts {
		sum += c * c
		nonzero = nonzero || c != 0
	}
	if !nonzero {
		i, _ := bucket(model, task, "\x00text\x00"+text, dims)
		counts[i], sum = 1, 1
	}
	// The counts and their sum of squares are integers, exact in float64;
	// the square root and the divisions are correctly rounded, so every
	// machine computes the same bits.
	norm := math.Sqrt(float64(sum))
	v := make([]float32, dims)
	for i, c := range counts {
		v[i] = float32(float64(c) / norm)
	}
	return v
}

// bucket hashes a feature to a component and a sign.
func bucket(model, task, feature string, dims int) (int, int64) {
	h := fnv.New64a()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(task))
	h.Write([]byte{0})
	h.Write([]byte(feature))
	x := mix(h.Sum64())
	sign := int64(1)
	if x>>63 == 1 {
		sign = -1
	}
	return int((x & (1<<63 - 1)) % uint64(dims)), sign
}

// mix is SplitMix64's finaliser: FNV-1a alone leaves its low bits, which
// pick the component, poorly mixed.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// features are the text's lower-cased words (runs of letters and digits)
// and its pairs of adjacent words.
func features(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := append([]string(nil), words...)
	for i := 1; i < len(words); i++ {
		out = append(out, words[i-1]+" "+words[i])
	}
	return out
}

// truncateTokens cuts text to at most n of the simulator's tokens (4n
// bytes), at a rune boundary.
func truncateTokens(text string, n int) string {
	limit := 4 * n
	if len(text) <= limit {
		return text
	}
	for limit > 0 && !isRuneStart(text[limit]) {
		limit--
	}
	return text[:limit]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
