package journal

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"github.com/agentcapsule/capsule/digest"
)

// parseFast parses the common line: a version-1 or version-2 envelope of a known kind
// whose envelope strings need no escapes and whose id is right. It matches
// the members in their canonical order instead of scanning them generically,
// which makes reading a journal several times faster. It returns ok false
// for any other line, which then takes the general path (parseOwned); a line
// it accepts is one the general path accepts, with the same event.
func parseFast(line []byte, in *interner) (Event, bool) {
	c := cursor{b: line, ok: true}
	var e Event
	c.lit(`{"body":`)
	e.Body = c.value()
	c.lit(`,"clock":`)
	e.Clock = c.uint()
	c.lit(`,"epoch":`)
	e.Epoch = c.uint()
	idStart := c.i
	c.lit(`,"id":"sha256:`)
	hexAt := c.hex64()
	c.lit(`"`)
	idEnd := c.i
	c.lit(`,"kind":"`)
	e.Kind = knownKind(c.str())
	c.lit(`,"machine":"`)
	e.Machine = in.machine(c.str()) // "" unless valid
	prevAt := -1
	if c.has(`,"prev":"sha256:`) {
		prevAt = c.hex64()
		c.lit(`"`)
	}
	c.lit(`,"seq":`)
	e.Seq = c.uint()
	var wall []byte
	if c.has(`,"time":"`) {
		wall = c.str()
	}
	v := c.version()
	if !c.ok || v < KindSince(e.Kind) || c.i != len(line) || e.Kind == "" || e.Machine == "" || e.Clock == 0 || e.Seq == 0 || (prevAt < 0) != (e.Seq == 1) {
		return Event{}, false
	}
	if wall != nil && !validTime(wall) || !hashMatches(in.hasher(), line, idStart, idEnd, hexAt) {
		return Event{}, false
	}
	if prevAt >= 0 && !in.setPrev(&e, line[prevAt-7:prevAt+64]) {
		return Event{}, false
	}
	e.V = v
	idOff := in.set(&e, fieldID, line[hexAt-7:hexAt+64])
	if wall != nil {
		in.set(&e, fieldTime, wall)
	}
	if in != nil && in.blocks {
		in.setLastID(e.Machine, idOff)
	} else {
		in.saw(&e)
	}
	return e, true
}

func validHex(b []byte) bool {
	for _, ch := range b {
		if !digest.IsHexDigit(ch) {
			return false
		}
	}
	return true
}

// hashMatches checks the id: the hash of the line without the id member
// (the bytes from idStart to idEnd) equals the 64 hex digits at hexAt.
func hashMatches(h hash.Hash, line []byte, idStart, idEnd, hexAt int) bool {
	h.Write(line[:idStart])
	h.Write(line[idEnd:])
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	var hx [2 * sha256.Size]byte
	for k, v := range sum {
		binary.LittleEndian.PutUint16(hx[2*k:], hexPairs[v])
	}
	return string(hx[:]) == string(line[hexAt:hexAt+64])
}

// hexPairs holds the two lowercase hex digits of each byte, the first in
// the low byte, so that one 16-bit store writes them in order.
var hexPairs = func() (t [256]uint16) {
	const digits = "0123456789abcdef"
	for v := range t {
		t[v] = uint16(digits[v>>4]) | uint16(digits[v&15])<<8
	}
	return t
}()

func knownKind(b []byte) Kind {
	for _, k := range KnownKinds {
		if string(k) == string(b) {
			return k
		}
	}
	return ""
}

// cursor matches a line piece by piece; after the first mismatch ok is
// false and every later step does nothing.
type cursor struct {
	b  []byte
	i  int
	ok bool
}

func (c *cursor) lit(s string) {
	if c.ok && hasPrefixAt(c.b, c.i, s) {
		c.i += len(s)
		return
	}
	c.ok = false
}

// version reads the closing `,"v":N}` of a line whose version this
// release writes or reads (FloorVersion to SchemaVersion, one digit); any
// other version takes the general path.
func (c *cursor) version() int {
	c.lit(`,"v":`)
	if !c.ok || len(c.b)-c.i < 2 || c.b[c.i+1] != '}' {
		c.ok = false
		return 0
	}
	v := int(c.b[c.i]) - '0'
	if v < FloorVersion || v > SchemaVersion {
		c.ok = false
		return 0
	}
	c.i += 2
	return v
}

// has consumes s if the line continues with it.
func (c *cursor) has(s string) bool {
	if c.ok && hasPrefixAt(c.b, c.i, s) {
		c.i += len(s)
		return true
	}
	return false
}

// value scans a canonical JSON value.
func (c *cursor) value() []byte {
	if !c.ok {
		return nil
	}
	s := scanner{b: c.b, i: c.i}
	if s.value(1) != nil {
		c.ok = false
		return nil
	}
	v := c.b[c.i:s.i]
	c.i = s.i
	return v
}

// uint reads a canonical integer of 1 to 15 digits.
func (c *cursor) uint() uint64 {
	if !c.ok {
		return 0
	}
	start := c.i
	var n uint64
	for c.i < len(c.b) && c.i-start < 16 && '0' <= c.b[c.i] && c.b[c.i] <= '9' {
		n = n*10 + uint64(c.b[c.i]-'0')
		c.i++
	}
	if d := c.i - start; d == 0 || d > 15 || d > 1 && c.b[start] == '0' {
		c.ok = false
	}
	return n
}

// hex64 skips the 64 hex digits of a digest, returning where they start.
func (c *cursor) hex64() int {
	at := c.i
	if !c.ok || len(c.b)-c.i < 64 {
		c.ok = false
		return at
	}
	c.i += 64
	return at
}

// str reads the rest of a string whose opening quote was matched; it must
// hold only plain bytes (no escapes, no control or non-ASCII bytes).
func (c *cursor) str() []byte {
	if !c.ok {
		return nil
	}
	start := c.i
	c.i = skipPlain(c.b, c.i)
	if c.i >= len(c.b) || c.b[c.i] != '"' {
		c.ok = false
		return nil
	}
	c.i++
	return c.b[start : c.i-1]
}
