package memory

import (
	"unicode"
	"unicode/utf8"
)

// TokenizerName names the tokenizer of this file and its version. A change
// to what Tokenize returns for any text must change it: the index's
// fingerprint covers it (FORMAT §11.7.2).
const TokenizerName = "capsule-tok/1"

// maxTokenBytes bounds one token; a longer run of letters and digits (a
// hash, a base64 blob) is cut to its first maxTokenBytes bytes.
const maxTokenBytes = 64

// Tokenize splits text into the tokens of capsule-tok/1 (FORMAT §11.7.2):
//
//  1. A token is a maximal run of Unicode letters (category L) and decimal
//     digits (Nd); every other rune separates tokens.
//  2. Each rune is lower-cased with unicode.ToLower (simple case mapping).
//  3. A token longer than 64 bytes is cut to the longest prefix of whole
//     runes within 64 bytes.
//  4. Stem removes one English suffix from tokens that are all ASCII
//     letters (see Stem).
//
// Tokenize calls visit with each token in order; the slice is reused after
// visit returns.
func Tokenize(text string, visit func(tok []byte)) {
	var arr [maxTokenBytes]byte
	buf := arr[:0]
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf { // ASCII: the same rules, without decoding
			i++
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			default:
				buf = flushToken(buf, visit)
				continue
			}
			if len(buf) < maxTokenBytes {
				buf = append(buf, c)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			buf = flushToken(buf, visit)
			continue
		}
		r = unicode.ToLower(r)
		if len(buf)+utf8.RuneLen(r) <= maxTokenBytes {
			buf = utf8.AppendRune(buf, r)
		}
	}
	flushToken(buf, visit)
}

func flushToken(buf []byte, visit func([]byte)) []byte {
	if len(buf) > 0 {
		visit(Stem(buf))
	}
	return buf[:0]
}

// Tokens returns the tokens of text as strings.
func Tokens(text string) []string {
	var out []string
	Tokenize(text, func(tok []byte) { out = append(out, string(tok)) })
	return out
}

// Stem is capsule-tok/1's light stemmer. It changes only tokens of ASCII
// letters a-z of at least four bytes, and removes at most one suffix, the
// first of these that matches, when at least three bytes remain:
// "ies" → "y"; "ments", "ment", "ings", "ing", "ers", "er", "ed", "es",
// "ly" → ""; "s" → "" unless the token ends in "ss", "us" or "is". The
// result may alias tok.
func Stem(tok []byte) []byte {
	if len(tok) < 4 || !asciiLetters(tok) {
		return tok
	}
	if hasSuffix(tok, "ies") && len(tok) >= 6 {
		return append(tok[:len(tok)-3], 'y')
	}
	for _, suf := range stemSuffixes[tok[len(tok)-1]] {
		if hasSuffix(tok, suf) && len(tok)-len(suf) >= 3 {
			return tok[:len(tok)-len(suf)]
		}
	}
	if hasSuffix(tok, "s") && !hasSuffix(tok, "ss") && !hasSuffix(tok, "us") && !hasSuffix(tok, "is") {
		return tok[:len(tok)-1]
	}
	return tok
}

// stemSuffixes are the suffixes Stem removes, in the order it tries them
// (FORMAT §11.7.2), by their last byte.
var stemSuffixes = map[byte][]string{
	's': {"ments", "ings", "ers", "es"},
	't': {"ment"},
	'g': {"ing"},
	'r': {"er"},
	'd': {"ed"},
	'y': {"ly"},
}

func asciiLetters(b []byte) bool {
	for _, c := range b {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func hasSuffix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[len(b)-len(s):]) == s
}
