package journal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// scanner checks, in one pass and without allocating, that a text is already
// in RFC 8785 canonical form. It is the hot path of reading a journal, so it
// works on bytes and never builds a tree.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) fail(sentinel error, msg string) error {
	return &SyntaxError{Offset: s.i, Msg: msg, Err: sentinel}
}

// span is a member of the top-level object: the name (canonical text without
// quotes) and the value, as offsets into the line.
type span struct {
	name       []byte
	start, end int // the whole member, name through value
	vstart     int // the value
}

// topLevel checks that b is one canonical JSON object and returns its
// members. It appends to dst to let the caller reuse a buffer.
func (s *scanner) topLevel(dst []span) ([]span, error) {
	if len(s.b) == 0 || s.b[0] != '{' {
		if len(s.b) > 0 && isSpace(s.b[0]) {
			return dst, s.fail(ErrNotCanonical, "white space before the object")
		}
		return dst, s.fail(ErrSyntax, "a line must be a JSON object")
	}
	s.i = 1
	err := s.members(0, func(name []byte, start, vstart int) {
		dst = append(dst, span{name: name, start: start, vstart: vstart, end: s.i})
	})
	if err != nil {
		return dst, err
	}
	if s.i != len(s.b) {
		return dst, s.fail(ErrSyntax, "text after the object")
	}
	return dst, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// members scans the inside of an object after its '{', through its '}',
// calling seen after each member.
func (s *scanner) members(depth int, seen func(name []byte, start, vstart int)) error {
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	var prev []byte
	for {
		start := s.i
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return s.unexpected("a member name")
		}
		if err := s.str(); err != nil {
			return err
		}
		name := s.b[start+1 : s.i-1]
		if err := s.checkOrder(prev, name); err != nil {
			return err
		}
		prev = name
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return s.unexpected("':'")
		}
		s.i++
		vstart := s.i
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if seen != nil {
			seen(name, start, vstart)
		}
		if s.i >= len(s.b) {
			return s.fail(ErrSyntax, "unterminated object")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.unexpected("',' or '}'")
		}
	}
}

// unexpected reports the byte at s.i, telling white space (valid JSON, but
// not canonical) from garbage.
func (s *scanner) unexpected(want string) error {
	if s.i >= len(s.b) {
		return s.fail(ErrSyntax, "unexpected end of line, want "+want)
	}
	if isSpace(s.b[s.i]) {
		return s.fail(ErrNotCanonical, "white space")
	}
	return s.fail(ErrSyntax, fmt.Sprintf("unexpected %q, want %s", s.b[s.i], want))
}

func (s *scanner) checkOrder(prev, name []byte) error {
	if prev == nil {
		return nil
	}
	switch c := compareCanonicalNames(prev, name); {
	case c == 0:
		return s.fail(ErrSyntax, fmt.Sprintf("duplicate member name %q", clip(string(name))))
	case c > 0:
		return s.fail(ErrNotCanonical, fmt.Sprintf("member %q is not in sorted order", clip(string(name))))
	}
	return nil
}

// compareCanonicalNames orders two names given as canonical string bodies
// (escapes included) by UTF-16 code units.
//
// Canonical strings write every character one way, so equal bytes up to the
// first difference mean equal characters; byte order then decides unless
// an escape is involved or the difference is between a character in
// U+E000-U+FFFF (lead byte EE or EF) and one above U+FFFF (lead byte F0-F4),
// which UTF-16 orders the other way.
func compareCanonicalNames(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		if a[i] == '\\' {
			return compareUTF16(unquote(a), unquote(b))
		}
		i++
	}
	if i == len(a) || i == len(b) {
		return len(a) - len(b)
	}
	x, y := a[i], b[i]
	if x == '\\' || y == '\\' || x >= 0xEE && y >= 0xEE && (x >= 0xF0) != (y >= 0xF0) {
		return compareUTF16(unquote(a), unquote(b))
	}
	return int(x) - int(y)
}

// unquote decodes the body of a string the scanner has already checked.
func unquote(b []byte) string {
	if !hasBackslash(b) {
		return string(b)
	}
	p := parser{b: b}
	out := make([]byte, 0, len(b))
	for p.i < len(b) {
		if b[p.i] != '\\' {
			out = append(out, b[p.i])
			p.i++
			continue
		}
		out, _ = p.escape(out) // checked by the scanner
	}
	return string(out)
}

func hasBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

func (s *scanner) value(depth int) error {
	if depth > maxDepth {
		return s.fail(ErrSyntax, "nested too deeply")
	}
	if s.i >= len(s.b) {
		return s.fail(ErrSyntax, "unexpected end of line")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		s.i++
		return s.members(depth, nil)
	case c == '[':
		return s.array(depth)
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.unexpected("a value")
}

func (s *scanner) literal(lit string) error {
	if !hasPrefixAt(s.b, s.i, lit) {
		return s.fail(ErrSyntax, "invalid literal")
	}
	s.i += len(lit)
	return nil
}

func (s *scanner) array(depth int) error {
	s.i++
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if s.i >= len(s.b) {
			return s.fail(ErrSyntax, "unterminated array")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.unexpected("',' or ']'")
		}
	}
}

// plain marks the bytes a canonical string holds without an escape: all but
// '"', '\\', control characters and the start of multi-byte UTF-8.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipPlain returns the index of the first byte at or after i that is not
// plain (see plain). Names, ids and kinds end within a few words, which
// the first loop tests eight bytes at a time with the classic SWAR tests
// "has a byte less than n" and "has a zero byte" (of x xor c), exact as
// yes/no answers for the whole word. Longer text goes to skipLong.
func skipPlain(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for k := 0; k < 4 && i+8 <= len(b); k, i = k+1, i+8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (ones * '"')
		bs := x ^ (ones * '\\')
		control := (x - ones*0x20) &^ x
		quote := (q - ones) &^ q
		backslash := (bs - ones) &^ bs
		if (control|quote|backslash|x)&highs != 0 {
			for plain[b[i]] {
				i++
			}
			return i
		}
	}
	return skipLong(b, i)
}

// plainWindow is how far skipLong looks ahead at a time: far enough to
// pay for the calls, near enough that a text with many escapes is not
// searched again and again to its end.
const plainWindow = 512

// skipLong is skipPlain for long text: bytes.IndexByte (vector
// instructions) finds the first quote and backslash in a window, and
// printable checks the bytes before them.
func skipLong(b []byte, i int) int {
	for i < len(b) {
		end := min(len(b), i+plainWindow)
		w := b[i:end]
		if q := bytes.IndexByte(w, '"'); q >= 0 {
			w = w[:q]
		}
		if k := bytes.IndexByte(w, '\\'); k >= 0 {
			w = w[:k]
		}
		if n := printable(w); i+n < end {
			return i + n
		}
		i = end
	}
	return i
}

// printable returns the length of the prefix of w that holds only bytes
// from 0x20 to 0x7f. A word's bytes all are when neither x nor x minus
// 0x20 in every byte has a high bit: a byte under 0x20 is the first to
// borrow, and sets its own.
func printable(w []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	const low = ones * 0x20
	le := binary.LittleEndian
	i := 0
	for ; i+32 <= len(w); i += 32 {
		a, b, c, d := le.Uint64(w[i:]), le.Uint64(w[i+8:]), le.Uint64(w[i+16:]), le.Uint64(w[i+24:])
		if (a|(a-low)|b|(b-low)|c|(c-low)|d|(d-low))&highs != 0 {
			break
		}
	}
	for ; i+8 <= len(w); i += 8 {
		if x := le.Uint64(w[i:]); (x|(x-low))&highs != 0 {
			break
		}
	}
	for i < len(w) && w[i] >= 0x20 && w[i] < utf8.RuneSelf {
		i++
	}
	return i
}

// str checks a canonical string starting at its opening quote.
func (s *scanner) str() error {
	s.i++
	b := s.b
	for {
		s.i = skipPlain(b, s.i)
		if s.i >= len(b) {
			return s.fail(ErrSyntax, "unterminated string")
		}
		switch c := b[s.i]; {
		case c == '"':
			s.i++
			return nil
		case c == '\\':
			if err := s.escape(); err != nil {
				return err
			}
		case c < 0x20:
			return s.fail(ErrSyntax, "control character in string")
		default:
			r, n := utf8.DecodeRune(b[s.i:])
			if r == utf8.RuneError && n <= 1 {
				return s.fail(ErrSyntax, "invalid UTF-8 in string")
			}
			s.i += n
		}
	}
}

// escape checks an escape sequence: canonical strings escape only '"', '\\'
// and control characters, with \b \t \n \f \r where they exist and lowercase
// \u00xx otherwise.
func (s *scanner) escape() error {
	if s.i+1 >= len(s.b) {
		return s.fail(ErrSyntax, "unterminated escape")
	}
	switch c := s.b[s.i+1]; c {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return nil
	case '/':
		return s.fail(ErrNotCanonical, `needless escape \/`)
	case 'u':
		return s.unicodeEscape()
	default:
		return s.fail(ErrSyntax, fmt.Sprintf("invalid escape \\%c", c))
	}
}

func (s *scanner) unicodeEscape() error {
	p := parser{b: s.b}
	r, ok := p.hex4(s.i + 2)
	if !ok {
		return s.fail(ErrSyntax, "invalid \\u escape")
	}
	lit := string(s.b[s.i : s.i+6])
	want := string(appendQuoted(nil, string(rune(r))))
	if r < 0x20 && lit == want[1:len(want)-1] {
		s.i += 6
		return nil
	}
	// Valid JSON (or a lone surrogate) but never canonical: find which.
	p.i = s.i
	if _, err := p.escape(nil); err != nil {
		return s.fail(ErrSyntax, "lone surrogate in string")
	}
	return s.fail(ErrNotCanonical, fmt.Sprintf("needless escape %s", lit))
}

// number checks a canonical number: integers of up to 15 digits are
// canonical as written; anything else must equal its ECMAScript form.
func (s *scanner) number() error {
	start := s.i
	p := parser{b: s.b, i: s.i}
	if !p.numberGrammar() {
		return s.fail(ErrSyntax, "invalid number")
	}
	s.i = p.i
	lit := s.b[start:s.i]
	if isShortInteger(lit) {
		return nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		s.i = start
		return s.fail(ErrSyntax, fmt.Sprintf("number %s out of range", clip(string(lit))))
	}
	if text := appendNumber(nil, f); string(text) != string(lit) {
		s.i = start
		return s.fail(ErrNotCanonical, fmt.Sprintf("number %s is written %s in canonical form", clip(string(lit)), text))
	}
	return nil
}

func isShortInteger(lit []byte) bool {
	d := lit
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || string(lit) == "-0" {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Member is one member of a JSON object: its name as written (without the
// quotes) and its value's text.
type Member struct {
	Name, Value []byte
}

// Members returns the top-level members of obj, which must be one JSON
// object in canonical form (an event's Body is), appended to dst. It reads
// obj once and allocates only to grow dst, so a reader that needs a few
// fields of many bodies (a timeline) can skip a full decode.
func Members(dst []Member, obj []byte) ([]Member, error) {
	var buf [16]span
	s := scanner{b: obj}
	spans, err := s.topLevel(buf[:0])
	if err != nil {
		return dst, err
	}
	for _, sp := range spans {
		dst = append(dst, Member{Name: sp.name, Value: obj[sp.vstart:sp.end]})
	}
	return dst, nil
}
