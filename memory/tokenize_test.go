package memory

import (
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FORMAT §11.7.2: capsule-tok/1, rule by rule.
func TestTokens(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"hello", "world"}},
		{"deploying deployments deployed", []string{"deploy", "deploy", "deploy"}},
		{"owner owns listeners", []string{"own", "own", "listen"}},
		{"policies class status axis bus", []string{"policy", "class", "status", "axis", "bus"}},
		{"is was the runs", []string{"is", "was", "the", "run"}},
		{"port 8443/tcp v1.2", []string{"port", "8443", "tcp", "v1", "2"}},
		{"Größe ÉTÉ naïve", []string{"größe", "été", "naïve"}},
		{"日本語のテキスト", []string{"日本語のテキスト"}},
		{"snake_case-and.dots", []string{"snake", "case", "and", "dot"}},
		{strings.Repeat("a", 70), []string{strings.Repeat("a", 64)}},
		{strings.Repeat("é", 40), []string{strings.Repeat("é", 32)}},
		{" \t\n", nil},
	} {
		if got := Tokens(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Tokens(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FORMAT §11.7.2: capsule-chunk/1's windows cover the text, stay within
// the limits, overlap by at most ChunkOverlap and cut at rune boundaries.
func TestSpans(t *testing.T) {
	for _, text := range []string{
		"",
		"short",
		strings.Repeat("word ", 2000),
		strings.Repeat("x", 5000),
		strings.Repeat("é", 3000),
		strings.Repeat("日本語 ", 900),
	} {
		spans := Spans(text)
		end := 0
		for i, s := range spans {
			if s[1]-s[0] > ChunkMax || s[0] >= s[1] {
				t.Fatalf("span %d %v of a %d-byte text", i, s, len(text))
			}
			if s[0] > end || i > 0 && (end-s[0] > ChunkOverlap || s[0] <= spans[i-1][0]) {
				t.Fatalf("span %d %v after one ending at %d", i, s, end)
			}
			if !utf8.ValidString(text[s[0]:s[1]]) {
				t.Fatalf("span %d %v cuts a rune", i, s)
			}
			end = s[1]
		}
		if end != len(text) {
			t.Fatalf("spans end at %d of %d", end, len(text))
		}
	}
}

// The hashed vector has unit norm, and morphological variants share much
// of it.
func TestHashVector(t *testing.T) {
	norm := func(v []float32) float64 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	}
	cos := func(a, b []float32) float64 {
		var s float64
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
	a, b, c := HashVector("rolled back the deployment"), HashVector("roll back deploy"), HashVector("certificate expiry date")
	if math.Abs(norm(a)-1) > 1e-6 || norm(HashVector("the of a")) != 0 {
		t.Fatalf("norms %v, %v", norm(a), norm(HashVector("the of a")))
	}
	if cos(a, b) < 0.5 || cos(a, c) > 0.3 {
		t.Fatalf("cos(variants) %.2f, cos(unrelated) %.2f", cos(a, b), cos(a, c))
	}
}

// float16 round trips exactly for representable values and rounds to
// nearest even otherwise.
func TestFloat16(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff}, {1e6, 0x7c00},
		{5.960464477539063e-08, 0x0001}, {1.0009765625, 0x3c01}, {1.00048828125, 0x3c00}, {1.00146484375, 0x3c02},
	} {
		if got := floatToHalf(c.in); got != c.want {
			t.Errorf("floatToHalf(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
		if c.want != 0x7c00 && halfToFloat(c.want) != c.in && c.in != 1.00048828125 && c.in != 1.00146484375 {
			t.Errorf("halfToFloat(%#04x) = %g, want %g", c.want, halfToFloat(c.want), c.in)
		}
	}
}

// scoreAll (four at a time, over the query's nonzero values, on every
// core) gives exactly the plain dot product.
func TestScoreAllIsTheDotProduct(t *testing.T) {
	v := newVectors(HashDims, DTypeInt8, 0)
	var texts []string
	for i := range parallelMin + 7 {
		texts = append(texts, strings.Repeat("gateway port ", i%5)+Snippet(strings.Repeat("x", i%300)))
		v.add(HashVector(texts[i]))
	}
	q := v.prepare(HashVector("gateway port 8443"))
	got := v.scoreAll(q, len(texts), nil)
	for i := range texts {
		if want := float64(dotInt8(q.q, v.q[i*HashDims:(i+1)*HashDims])) / (127 * 127); got[i] != want {
			t.Fatalf("vector %d: %v, want %v", i, got[i], want)
		}
	}
}
