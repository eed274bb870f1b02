package render

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// The patterns exactly as github.com/tiktoken-go/tokenizer compiles them.
const (
	o200kPattern  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var (
	o200kRE  = regexp2.MustCompile(o200kPattern, regexp2.None)
	cl100kRE = regexp2.MustCompile(cl100kPattern, regexp2.None)
)

func regexPieces(t interface{ Fatal(...any) }, re *regexp2.Regexp, s string) []string {
	var out []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ourPieces(split func(string, func(int, int)), s string) []string {
	var out []string
	split(s, func(i, j int) { out = append(out, s[i:j]) })
	return out
}

// alphabet mixes every class the patterns distinguish: ASCII letters of
// both cases, digits, apostrophes and contraction letters, punctuation,
// slashes, each kind of white space, letters of other scripts (Lu, Ll,
// Lt, Lm, Lo), combining marks, other numbers (Nl, No) and symbols.
var alphabet = []rune("aAsStTrReEvVlLmMdDzZ09'' \t\n\r\v\f/.,;:!?-_(){}[]\"\\#@" +
	"\u00a0\u0085\u2028\u3000\u1680" + // unusual spaces
	"Ééßǅǈʰʹˆ々ー中文字ひらがな" + // Lu Ll Lt Lm Lo
	"\u0301\u0308\u20dd\u0903" + // marks Mn Me Mc
	"ⅧⅫ²½٣" + // Nl No Nd
	"€😀ſK")

func TestSplitMatchesRegexp(t *testing.T) {
	fixed := []string{
		"", "hello world", "  leading", "trailing  ", "a\r\n\r\nb", "x  \n  y",
		"I'm they'RE we'Ve it'S", "don't'll'd", "HTTPServer", "ÉcoleNormale", "ǅemal",
		"\u0301abc", " \u0301Abc", "a\u0301\u0301", "12345678", "Ⅻ²½", "foo//bar\n/\n",
		"{\"a\": [1, 2]}", "   ", "\n", "😀😀 x", "ſ's 'ſ", "\u00a0\u00a0x", "ʰʰʰA", "ー中ー",
	}
	for _, s := range fixed {
		if d := cmp.Diff(regexPieces(t, o200kRE, s), ourPieces(splitO200k, s)); d != "" {
			t.Errorf("o200k %q: (-regex +ours)\n%s", s, d)
		}
		if d := cmp.Diff(regexPieces(t, cl100kRE, s), ourPieces(splitCl100k, s)); d != "" {
			t.Errorf("cl100k %q: (-regex +ours)\n%s", s, d)
		}
	}
}

// TestSplitRandom compares the splitters with the regex engine on random
// text. Replay a failure with: go test ./render -run TestSplitRandom -rapid.seed=SEED
func TestSplitRandom(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rs := rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 40).Draw(t, "runes")
		s := string(rs)
		if d := cmp.Diff(regexPieces(t, o200kRE, s), ourPieces(splitO200k, s)); d != "" {
			t.Fatalf("o200k %q: (-regex +ours)\n%s", s, d)
		}
		if d := cmp.Diff(regexPieces(t, cl100kRE, s), ourPieces(splitCl100k, s)); d != "" {
			t.Fatalf("cl100k %q: (-regex +ours)\n%s", s, d)
		}
	})
}

// FuzzSplit checks the splitters against the regex engine on any valid
// UTF-8 text, and the memoized count against the library's count.
func FuzzSplit(f *testing.F) {
	f.Add("hello world, it's 2024!\n\n  x")
	f.Add("ÉcoleNormale\u0301 ʰA ½")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || len(s) > 4096 {
			return
		}
		if d := cmp.Diff(regexPieces(t, o200kRE, s), ourPieces(splitO200k, s)); d != "" {
			t.Fatalf("o200k %q: (-regex +ours)\n%s", s, d)
		}
		if d := cmp.Diff(regexPieces(t, cl100kRE, s), ourPieces(splitCl100k, s)); d != "" {
			t.Fatalf("cl100k %q: (-regex +ours)\n%s", s, d)
		}
		for _, enc := range []string{o200k, cl100k} {
			want, _ := codecs[enc]().Count(s)
			if got := newCounter(enc).count(s); got != want {
				t.Fatalf("%s count %q = %d, library says %d", enc, s, got, want)
			}
		}
	})
}

func TestCountMatchesLibrary(t *testing.T) {
	texts := []string{
		"The quick brown fox jumps over the lazy dog.",
		strings.Repeat("func main() {\n\tfmt.Println(\"hi\")\n}\n", 20),
		"Ünïcödé 文字 ひらがな 😀 it's THEY'RE 12345 ½",
	}
	for _, enc := range []string{o200k, cl100k} {
		c := newCounter(enc)
		for _, s := range texts {
			want, _ := codecs[enc]().Count(s)
			if got := c.count(s); got != want {
				t.Errorf("%s: count(%q) = %d, want %d", enc, s, got, want)
			}
		}
	}
}

func TestCounterPrefix(t *testing.T) {
	c := newCounter(o200k)
	s := strings.Repeat("alpha beta gamma ", 50)
	total := c.count(s)
	for _, max := range []int{0, 1, 7, total / 2, total, total + 5} {
		p, n := c.prefix(s, max)
		if !strings.HasPrefix(s, p) || n > max || n != c.count(p) {
			t.Errorf("prefix(max=%d) = %d tokens %q", max, n, p)
		}
		if max >= total && p != s {
			t.Errorf("prefix(max=%d) cut a text of %d tokens", max, total)
		}
	}
}
