package render

import (
	"unicode"
	"unicode/utf8"
)

// This file reimplements, without a regular-expression engine, the
// pre-tokenizer patterns of the o200k_base and cl100k_base encodings as
// github.com/tiktoken-go/tokenizer compiles them (regexp2, .NET
// semantics: \s is unicode.IsSpace, leftmost alternative wins, greedy
// quantifiers backtrack). The regex engine is most of the cost of
// counting tokens; this splitter is exact, which TestSplitMatchesRegexp
// and FuzzSplit check against the library on random and hostile text.
// A token count is the sum over pieces of the BPE token count of each
// piece, and the renderer memoizes piece counts within one render.
//
// o200k_base:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// cl100k_base:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+

// runeAt decodes the rune at byte offset i of s; past the end it returns
// -1 and width 0.
func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || r >= '\t' && r <= '\r'
	}
	return unicode.IsSpace(r)
}

func isMark(r rune) bool { return r >= utf8.RuneSelf && unicode.Is(unicode.M, r) }

// isUpperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}].
func isUpperish(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'A' && r <= 'Z'
	}
	return unicode.IsLetter(r) && !unicode.Is(unicode.Ll, r) || isMark(r)
}

// isLowerish is [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isLowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z'
	}
	return unicode.IsLetter(r) && !unicode.Is(unicode.Lu, r) && !unicode.Is(unicode.Lt, r) || isMark(r)
}

// isPrefixChar is [^\r\n\p{L}\p{N}].
func isPrefixChar(r rune) bool {
	return r >= 0 && r != '\r' && r != '\n' && r != del && !isLetter(r) && !isNumber(r)
}

// isSymbol is [^\s\p{L}\p{N}].
func isSymbol(r rune) bool { return r >= 0 && r != del && !isSpace(r) && !isLetter(r) && !isNumber(r) }

// del (U+007F) matches none of the library's compiled character classes,
// so the library skips it without counting a token; the splitter does the
// same to stay exact with the library.
const del = 0x7f

// Rune classes for run, as bits so ASCII is answered by one table lookup.
const (
	clsUpper  = 1 << iota // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	clsLower              // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	clsLetter             // \p{L}
	clsSpace              // \s
	clsSymbol             // [^\s\p{L}\p{N}]
)

// asciiClass holds the classes of each ASCII byte.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := rune(0); c < utf8.RuneSelf; c++ {
		for _, k := range []struct {
			bit uint8
			in  func(rune) bool
		}{{clsUpper, isUpperish}, {clsLower, isLowerish}, {clsLetter, isLetter}, {clsSpace, isSpace}, {clsSymbol, isSymbol}} {
			if k.in(c) {
				t[c] |= k.bit
			}
		}
	}
	return t
}()

// inClass reports whether a non-ASCII rune is in class cls.
func inClass(r rune, cls uint8) bool {
	switch cls {
	case clsUpper:
		return isUpperish(r)
	case clsLower:
		return isLowerish(r)
	case clsLetter:
		return isLetter(r)
	case clsSpace:
		return isSpace(r)
	}
	return isSymbol(r)
}

// run returns the end of the longest run starting at i of runes in class
// cls.
func run(s string, i int, cls uint8) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiClass[c]&cls == 0 {
				return i
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if !inClass(r, cls) {
			return i
		}
		i += w
	}
	return i
}

// runFunc is run for the classes outside the table (the tails of the
// symbol alternative).
func runFunc(s string, i int, class func(rune) bool) int {
	for {
		r, w := runeAt(s, i)
		if w == 0 || !class(r) {
			return i
		}
		i += w
	}
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or i.
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' {
		return i
	}
	r1, w1 := runeAt(s, i+1)
	switch {
	case foldsTo(r1, 's'), foldsTo(r1, 't'), foldsTo(r1, 'm'), foldsTo(r1, 'd'):
		return i + 1 + w1
	}
	r2, w2 := runeAt(s, i+1+w1)
	if foldsTo(r1, 'r') && foldsTo(r2, 'e') || foldsTo(r1, 'v') && foldsTo(r2, 'e') || foldsTo(r1, 'l') && foldsTo(r2, 'l') {
		return i + 1 + w1 + w2
	}
	return i
}

// foldsTo reports whether r equals the lower-case ASCII letter c under
// simple case folding, as (?i) compares ("ſ" folds to "s").
func foldsTo(r, c rune) bool {
	if r < 0 {
		return false
	}
	for f := c; ; {
		if r == f {
			return true
		}
		if f = unicode.SimpleFold(f); f == c {
			return false
		}
	}
}

// o200kWord matches the first two alternatives of o200k_base at i, in the
// order the regex engine tries them: each alternative first with its
// optional [^\r\n\p{L}\p{N}] prefix rune, then without it. Without the
// prefix a word can only start at i if the rune there is a mark, the one
// kind of rune that is both a possible prefix and a word rune.
func o200kWord(s string, i int) int {
	r, w := runeAt(s, i)
	if !isPrefixChar(r) {
		if end := wordLower(s, i); end >= 0 {
			return end
		}
		return wordUpper(s, i)
	}
	mark := isMark(r)
	if end := wordLower(s, i+w); end >= 0 {
		return end
	}
	if mark {
		if end := wordLower(s, i); end >= 0 {
			return end
		}
	}
	if end := wordUpper(s, i+w); end >= 0 {
		return end
	}
	if mark {
		return wordUpper(s, i)
	}
	return -1
}

// wordLower matches U* Lw+ C? at j (U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
// Lw = [\p{Ll}\p{Lm}\p{Lo}\p{M}], C the contractions), with the
// backtracking of U* into runes that are also Lw.
func wordLower(s string, j int) int {
	u := run(s, j, clsUpper)
	if r, _ := runeAt(s, u); isLowerish(r) {
		return contraction(s, run(s, u, clsLower))
	}
	// A shorter U* run: the last rune of the U run that is also Lw is the
	// whole Lw+, because no later rune is Lw.
	last := -1
	for k := j; k < u; {
		r, w := runeAt(s, k)
		if isLowerish(r) {
			last = k + w
		}
		k += w
	}
	if last < 0 {
		return -1
	}
	return contraction(s, last)
}

// wordUpper matches U+ Lw* C? at j.
func wordUpper(s string, j int) int {
	u := run(s, j, clsUpper)
	if u == j {
		return -1
	}
	return contraction(s, run(s, u, clsLower))
}

// optionalPrefix returns where the letters of cl100k's second alternative
// start: after one [^\r\n\p{L}\p{N}] rune if there is one at i. That rune
// cannot be a letter, so the regex never backtracks to include it.
func optionalPrefix(s string, i int) int {
	r, w := runeAt(s, i)
	if isPrefixChar(r) {
		return i + w
	}
	return i
}

// spaceAlternatives matches \s*[\r\n]+|\s+(?!\S)|\s+ at i.
//
// The library's compiled regex matches \s*[\r\n]+ as if \s* were lazy:
// "\n \n" splits into "\n" and " \n". The splitter follows the library,
// so the piece ends after the first run of newlines in the space run.
func spaceAlternatives(s string, i int) int {
	end := run(s, i, clsSpace)
	if end == i {
		return -1
	}
	for k := i; k < end; k++ {
		if s[k] == '\r' || s[k] == '\n' {
			for k < end && (s[k] == '\r' || s[k] == '\n') {
				k++
			}
			return k
		}
	}
	if end == len(s) {
		return end
	}
	// \s+(?!\S): leave the last space rune for the next word.
	_, w := utf8.DecodeLastRuneInString(s[i:end])
	if end-w > i {
		return end - w
	}
	return end // \s+
}

// numbers matches \p{N}{1,3} at i.
func numbers(s string, i int) int {
	j := i
	for n := 0; n < 3; n++ {
		r, w := runeAt(s, j)
		if !isNumber(r) {
			break
		}
		j += w
	}
	if j == i {
		return -1
	}
	return j
}

// symbols matches ` ?[^\s\p{L}\p{N}]+` then a run of tail runes at i.
func symbols(s string, i int, tail func(rune) bool) int {
	j := i
	if s[i] == ' ' {
		j++
	}
	k := run(s, j, clsSymbol)
	if k == j {
		return -1
	}
	return runFunc(s, k, tail)
}

func isCRLFSlash(r rune) bool { return r == '\r' || r == '\n' || r == '/' }
func isCRLF(r rune) bool      { return r == '\r' || r == '\n' }

// splitO200k calls yield with the bounds of each pre-token piece of s
// under o200k_base.
func splitO200k(s string, yield func(start, end int)) {
	for i := 0; i < len(s); {
		end := o200kWord(s, i)
		if end < 0 {
			end = numbers(s, i)
		}
		if end < 0 {
			end = symbols(s, i, isCRLFSlash)
		}
		if end < 0 {
			end = spaceAlternatives(s, i)
		}
		if end < 0 { // no alternative matches: the regex skips the rune
			_, w := runeAt(s, i)
			i += w
			continue
		}
		yield(i, end)
		i = end
	}
}

// splitCl100k calls yield with the bounds of each pre-token piece of s
// under cl100k_base.
func splitCl100k(s string, yield func(start, end int)) {
	for i := 0; i < len(s); {
		end := contraction(s, i)
		if end == i {
			end = -1
			j := optionalPrefix(s, i)
			if k := run(s, j, clsLetter); k > j {
				end = k
			}
		}
		if end < 0 {
			end = numbers(s, i)
		}
		if end < 0 {
			end = symbols(s, i, isCRLF)
		}
		if end < 0 {
			end = spaceAlternatives(s, i)
		}
		if end < 0 {
			_, w := runeAt(s, i)
			i += w
			continue
		}
		yield(i, end)
		i = end
	}
}
