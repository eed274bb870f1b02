package journal

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The canonical form of a journal line is the JSON Canonicalization Scheme of
// RFC 8785 (JCS): no insignificant white space, object members sorted by the
// UTF-16 code units of their names, strings with the fewest escapes, numbers
// in the shortest ECMAScript form. Canonicalize turns any I-JSON text into
// that form; the scanner in scan.go checks that a text already is in it.

// maxDepth bounds the nesting of arrays and objects, so hostile input cannot
// exhaust the stack.
const maxDepth = 512

// Errors of the canonicalizer and of the line scanner.
var (
	// ErrSyntax marks text that is not JSON, or not I-JSON (invalid UTF-8,
	// lone surrogates, duplicate member names, numbers out of range).
	ErrSyntax = errors.New("journal: invalid JSON")
	// ErrNotCanonical marks a line that is valid JSON but not in RFC 8785 form.
	ErrNotCanonical = errors.New("journal: line not in canonical form")
	// ErrPrecision marks a number that RFC 8785 would change in value (an
	// integer beyond 2^53, a decimal with more digits than a double holds):
	// the journal refuses it rather than silently altering data.
	ErrPrecision = errors.New("journal: number not exactly representable")
)

// SyntaxError locates a problem in a JSON text.
type SyntaxError struct {
	Offset int    // byte offset in the text
	Msg    string // what is wrong
	Err    error  // ErrSyntax, ErrNotCanonical or ErrPrecision
}

// Error gives the sentinel, the offset and what is wrong.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%v at byte %d: %s", e.Err, e.Offset, e.Msg)
}

// Unwrap returns the sentinel.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Canonicalize returns the RFC 8785 canonical form of the JSON text src.
// Numbers are refused with ErrPrecision when their canonical form would not
// denote exactly the decimal value written in src.
func Canonicalize(src []byte) ([]byte, error) {
	return AppendCanonical(nil, src)
}

// AppendCanonical appends the canonical form of src to dst; see Canonicalize.
func AppendCanonical(dst, src []byte) ([]byte, error) {
	p := parser{b: src}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return dst, err
	}
	p.skipSpace()
	if p.i != len(p.b) {
		return dst, p.fail(ErrSyntax, "text after the value")
	}
	return v.appendTo(dst), nil
}

// node is a parsed JSON value: a scalar holds its canonical text, an array
// its elements, an object its members sorted by name.
type node struct {
	text    []byte
	elems   []node
	members []member
	kind    byte // 's' scalar, 'a' array, 'o' object
}

type member struct {
	name  string // decoded
	key   []byte // canonical text of the name, with quotes
	value node
}

func (n *node) appendTo(dst []byte) []byte {
	switch n.kind {
	case 'a':
		dst = append(dst, '[')
		for i := range n.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = n.elems[i].appendTo(dst)
		}
		return append(dst, ']')
	case 'o':
		dst = append(dst, '{')
		for i := range n.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, n.members[i].key...)
			dst = append(dst, ':')
			dst = n.members[i].value.appendTo(dst)
		}
		return append(dst, '}')
	}
	return append(dst, n.text...)
}

type parser struct {
	b     []byte
	i     int
	lossy bool // accept numbers that change in value (tests of RFC examples)
}

func (p *parser) fail(sentinel error, msg string) error {
	return &SyntaxError{Offset: p.i, Msg: msg, Err: sentinel}
}

func (p *parser) skipSpace() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (node, error) {
	if depth > maxDepth {
		return node{}, p.fail(ErrSyntax, "nested too deeply")
	}
	if p.i >= len(p.b) {
		return node{}, p.fail(ErrSyntax, "unexpected end of text")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return node{}, err
		}
		return node{kind: 's', text: appendQuoted(nil, s)}, nil
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if hasPrefixAt(p.b, p.i, lit) {
				p.i += len(lit)
				return node{kind: 's', text: []byte(lit)}, nil
			}
		}
		return node{}, p.fail(ErrSyntax, fmt.Sprintf("unexpected character %q", c))
	}
}

func hasPrefixAt(b []byte, i int, s string) bool {
	return len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

func (p *parser) array(depth int) (node, error) {
	p.i++
	n := node{kind: 'a'}
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return n, nil
	}
	for {
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return node{}, err
		}
		n.elems = append(n.elems, v)
		p.skipSpace()
		if p.i >= len(p.b) {
			return node{}, p.fail(ErrSyntax, "unterminated array")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return n, nil
		default:
			return node{}, p.fail(ErrSyntax, "expected ',' or ']' in array")
		}
	}
}

func (p *parser) object(depth int) (node, error) {
	p.i++
	n := node{kind: 'o'}
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return n, nil
	}
	for {
		m, err := p.member(depth)
		if err != nil {
			return node{}, err
		}
		n.members = append(n.members, m)
		p.skipSpace()
		if p.i >= len(p.b) {
			return node{}, p.fail(ErrSyntax, "unterminated object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return n, sortMembers(n.members, p)
		default:
			return node{}, p.fail(ErrSyntax, "expected ',' or '}' in object")
		}
	}
}

func (p *parser) member(depth int) (member, error) {
	p.skipSpace()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return member{}, p.fail(ErrSyntax, "expected a member name")
	}
	name, err := p.str()
	if err != nil {
		return member{}, err
	}
	p.skipSpace()
	if p.i >= len(p.b) || p.b[p.i] != ':' {
		return member{}, p.fail(ErrSyntax, "expected ':' after a member name")
	}
	p.i++
	p.skipSpace()
	v, err := p.value(depth + 1)
	if err != nil {
		return member{}, err
	}
	return member{name: name, key: appendQuoted(nil, name), value: v}, nil
}

func sortMembers(ms []member, p *parser) error {
	slices.SortFunc(ms, func(a, b member) int { return compareUTF16(a.name, b.name) })
	for i := 1; i < len(ms); i++ {
		if ms[i-1].name == ms[i].name {
			return p.fail(ErrSyntax, fmt.Sprintf("duplicate member name %q", clip(ms[i].name)))
		}
	}
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785 §3.2.3
// requires. It differs from byte order only between characters above U+FFFF
// (surrogate pairs, D800-DFFF) and those in U+E000-U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmpUnits(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

func cmpUnits(ra, rb rune) int {
	ua, ub := firstUnit(ra), firstUnit(rb)
	if ua != ub {
		return int(ua) - int(ub)
	}
	// Same high surrogate: the low surrogates order like the code points.
	return int(ra) - int(rb)
}

func firstUnit(r rune) rune {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
}

// str parses a JSON string at p.i and returns its decoded value.
func (p *parser) str() (string, error) {
	p.i++
	var out []byte
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := string(append(out, p.b[start:p.i]...))
			p.i++
			return s, nil
		case c == '\\':
			out = append(out, p.b[start:p.i]...)
			var err error
			if out, err = p.escape(out); err != nil {
				return "", err
			}
			start = p.i
		case c < 0x20:
			return "", p.fail(ErrSyntax, "control character in string")
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, n := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && n <= 1 {
				return "", p.fail(ErrSyntax, "invalid UTF-8 in string")
			}
			p.i += n
		}
	}
	return "", p.fail(ErrSyntax, "unterminated string")
}

func (p *parser) escape(out []byte) ([]byte, error) {
	if p.i+1 >= len(p.b) {
		return out, p.fail(ErrSyntax, "unterminated escape")
	}
	c := p.b[p.i+1]
	if r, ok := simpleEscapes[c]; ok {
		p.i += 2
		return append(out, r), nil
	}
	if c != 'u' {
		return out, p.fail(ErrSyntax, fmt.Sprintf("invalid escape \\%c", c))
	}
	r, ok := p.hex4(p.i + 2)
	if !ok {
		return out, p.fail(ErrSyntax, "invalid \\u escape")
	}
	p.i += 6
	if utf16.IsSurrogate(r) {
		lo, ok := p.lowSurrogate()
		if r >= 0xDC00 || !ok {
			return out, p.fail(ErrSyntax, "lone surrogate in string")
		}
		r = utf16.DecodeRune(r, lo)
	}
	return utf8.AppendRune(out, r), nil
}

func (p *parser) lowSurrogate() (rune, bool) {
	if !hasPrefixAt(p.b, p.i, `\u`) {
		return 0, false
	}
	lo, ok := p.hex4(p.i + 2)
	if !ok || lo < 0xDC00 || lo > 0xDFFF {
		return 0, false
	}
	p.i += 6
	return lo, true
}

var simpleEscapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func (p *parser) hex4(at int) (rune, bool) {
	if at+4 > len(p.b) {
		return 0, false
	}
	var r rune
	for _, c := range p.b[at : at+4] {
		d, ok := hexVal(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// appendQuoted appends s as a canonical JSON string (RFC 8785 §3.2.2.2).
func appendQuoted(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// number parses a JSON number and returns its canonical text, refusing one
// whose canonical form would change its decimal value.
func (p *parser) number() (node, error) {
	start := p.i
	if !p.numberGrammar() {
		return node{}, p.fail(ErrSyntax, "invalid number")
	}
	lit := p.b[start:p.i]
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		p.i = start
		return node{}, p.fail(ErrSyntax, fmt.Sprintf("number %s out of range", clip(string(lit))))
	}
	text := appendNumber(nil, f)
	if !p.lossy && !sameDecimal(lit, text) {
		p.i = start
		return node{}, p.fail(ErrPrecision, fmt.Sprintf("%s would become %s", clip(string(lit)), text))
	}
	return node{kind: 's', text: text}, nil
}

// numberGrammar advances over -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// and reports whether the text matched.
func (p *parser) numberGrammar() bool {
	b := p.b
	if p.i < len(b) && b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(b) && b[p.i] == '0':
		p.i++
	case p.i < len(b) && '1' <= b[p.i] && b[p.i] <= '9':
		p.digits()
	default:
		return false
	}
	if p.i < len(b) && b[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return false
		}
	}
	if p.i < len(b) && (b[p.i] == 'e' || b[p.i] == 'E') {
		p.i++
		if p.i < len(b) && (b[p.i] == '+' || b[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return false
		}
	}
	return true
}

func (p *parser) digits() int {
	n := 0
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

// appendNumber appends f in the form of ECMAScript's Number.prototype.toString,
// which RFC 8785 §3.2.2.3 prescribes. f must be finite.
func appendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d[.ddd]e±xx
	mant, exp := splitExp(e)
	digits := make([]byte, 0, len(mant))
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	return appendES(dst, digits, exp+1)
}

func splitExp(e []byte) ([]byte, int) {
	for i, c := range e {
		if c == 'e' {
			n, _ := strconv.Atoi(string(e[i+1:]))
			return e[:i], n
		}
	}
	return e, 0
}

// appendES lays out the digits s (no leading or trailing zeros) whose value
// is 0.s × 10^n, following ECMA-262 Number::toString.
func appendES(dst, s []byte, n int) []byte {
	k := len(s)
	switch {
	case k <= n && n <= 21:
		dst = append(dst, s...)
		for i := 0; i < n-k; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, s[:n]...)
		dst = append(dst, '.')
		dst = append(dst, s[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for i := 0; i < -n; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, s...)
	default:
		dst = append(dst, s[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, s[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// sameDecimal reports whether two JSON number texts denote the same decimal
// value exactly.
func sameDecimal(a, b []byte) bool {
	na, da, ea := decimal(a)
	nb, db, eb := decimal(b)
	if da == "" && db == "" {
		return true // both zero, whatever the sign
	}
	return na == nb && da == db && ea == eb
}

// decimal splits a JSON number into sign, significant digits without leading
// or trailing zeros, and the exponent of the last digit.
func decimal(t []byte) (neg bool, digits string, exp int) {
	if len(t) > 0 && t[0] == '-' {
		neg, t = true, t[1:]
	}
	var ds []byte
	afterDot := false
	i := 0
	for ; i < len(t) && t[i] != 'e' && t[i] != 'E'; i++ {
		if t[i] == '.' {
			afterDot = true
			continue
		}
		ds = append(ds, t[i])
		if afterDot {
			exp--
		}
	}
	if i < len(t) {
		e, err := strconv.Atoi(string(t[i+1:]))
		if err != nil {
			e = 1 << 30 // absurd exponents never compare equal to a real one
		}
		exp += e
	}
	for len(ds) > 0 && ds[0] == '0' {
		ds = ds[1:]
	}
	for len(ds) > 0 && ds[len(ds)-1] == '0' {
		ds = ds[:len(ds)-1]
		exp++
	}
	return neg, string(ds), exp
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
