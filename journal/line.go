package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentcapsule/capsule/digest"
)

// MaxLine is the largest journal line, newline excluded, that a reader
// accepts (docs/FORMAT.md §7.6). Larger content belongs in a blob.
const MaxLine = 16 << 20

// MaxInt is the largest seq, clock, epoch or version a line may carry: the
// largest integer an I-JSON reader holds exactly (2^53 - 1).
const MaxInt = 1<<53 - 1

// Errors of reading and sealing one event.
var (
	// ErrLineTooLong marks a line longer than MaxLine.
	ErrLineTooLong = errors.New("journal: line too long")
	// ErrEnvelope marks a line whose envelope members are missing, of the
	// wrong type or out of range.
	ErrEnvelope = errors.New("journal: invalid envelope")
	// ErrID marks a line whose id is not the hash of its content.
	ErrID = errors.New("journal: id does not match content")
)

// IDError is returned for a line whose id is not the hash of its content.
type IDError struct {
	Got  string // the id the line carries
	Want string // the hash of its canonical content
}

// Error gives both ids.
func (e *IDError) Error() string {
	return fmt.Sprintf("%v: line says %s, content hashes to %s", ErrID, e.Got, e.Want)
}

// Unwrap returns ErrID.
func (e *IDError) Unwrap() error { return ErrID }

func envelopeError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrEnvelope, fmt.Sprintf(format, args...))
}

// ParseLine parses one journal line (without the newline), checking that it
// is canonical JSON, that its envelope is well formed and that its id is the
// hash of its content. It does not check the chain; Verify does.
func ParseLine(line []byte) (Event, error) {
	if len(line) > MaxLine {
		return Event{}, fmt.Errorf("%w: %d bytes, limit %d", ErrLineTooLong, len(line), MaxLine)
	}
	return parseOwned(bytes.Clone(line), nil)
}

// parseOwned is ParseLine for a line the caller gives up: Body and Raw alias it.
func parseOwned(line []byte, in *interner) (Event, error) {
	if len(line) > MaxLine {
		return Event{}, fmt.Errorf("%w: %d bytes, limit %d", ErrLineTooLong, len(line), MaxLine)
	}
	if e, ok := parseFast(line, in); ok {
		return e, nil
	}
	var buf [16]span
	s := scanner{b: line}
	spans, err := s.topLevel(buf[:0])
	if err != nil {
		return Event{}, err
	}
	var e Event
	idAt, extra, err := e.fill(line, spans, in)
	if err != nil {
		return Event{}, err
	}
	if len(e.ID) != 7+64 || e.ID[:7] != "sha256:" {
		return Event{}, envelopeError("id %q is not a sha256 digest", clip(e.ID))
	}
	if err := e.check(); err != nil {
		return Event{}, err
	}
	if extra && e.V <= SchemaVersion {
		return Event{}, envelopeError("unknown member %q in a version %d envelope", clip(string(spans[extra1(spans)].name)), e.V)
	}
	if err := checkID(line, spans, idAt, e.ID); err != nil {
		return Event{}, err
	}
	if err := e.checkKindVersion(); err != nil {
		return Event{}, err
	}
	if extra || e.V > SchemaVersion || !e.Kind.Known() {
		e.Raw = line
	}
	in.saw(&e)
	return e, nil
}

// fill sets the fields of e from the members of a scanned line. It returns
// the index of the id member and whether the line has members this release
// does not know.
func (e *Event) fill(line []byte, spans []span, in *interner) (idAt int, extra bool, err error) {
	idAt = -1
	seen := 0
	for i, sp := range spans {
		v := line[sp.vstart:sp.end]
		var bit int
		switch string(sp.name) {
		case "body":
			bit, e.Body = 1, v
		case "clock":
			bit, err = 2, intField(&e.Clock, "clock", v)
		case "epoch":
			bit, err = 4, intField(&e.Epoch, "epoch", v)
		case "id":
			bit, idAt = 8, i
			err = stringField(&e.ID, "id", v, nil)
		case "kind":
			bit, err = 16, kindField(&e.Kind, v)
		case "machine":
			bit, err = 32, stringField(&e.Machine, "machine", v, nil)
		case "prev":
			bit, err = 64, stringField(&e.Prev, "prev", v, in.prevOf(e.Machine))
		case "seq":
			bit, err = 128, intField(&e.Seq, "seq", v)
		case "time":
			bit, err = 256, stringField(&e.Time, "time", v, nil)
		case "v":
			var n uint64
			bit, err = 512, intField(&n, "v", v)
			e.V = int(n)
		default:
			extra = true
		}
		if err != nil {
			return idAt, extra, err
		}
		seen |= bit
	}
	if seen&64 != 0 && e.Prev == "" || seen&256 != 0 && e.Time == "" {
		return idAt, extra, envelopeError("prev and time must be left out rather than empty")
	}
	return idAt, extra, missing(seen)
}

func extra1(spans []span) int {
	for i, sp := range spans {
		switch string(sp.name) {
		case "body", "clock", "epoch", "id", "kind", "machine", "prev", "seq", "time", "v":
		default:
			return i
		}
	}
	return 0
}

var required = []struct {
	bit  int
	name string
}{{1, "body"}, {2, "clock"}, {4, "epoch"}, {8, "id"}, {16, "kind"}, {32, "machine"}, {128, "seq"}, {512, "v"}}

func missing(seen int) error {
	for _, r := range required {
		if seen&r.bit == 0 {
			return envelopeError("missing member %q", r.name)
		}
	}
	return nil
}

func intField(dst *uint64, name string, v []byte) error {
	if len(v) == 0 || len(v) > 16 || v[0] == '-' {
		return envelopeError("%s must be an integer from 0 to 2^53-1, got %s", name, clip(string(v)))
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return envelopeError("%s must be an integer from 0 to 2^53-1, got %s", name, clip(string(v)))
		}
		n = n*10 + uint64(c-'0')
	}
	if n > MaxInt {
		return envelopeError("%s must be an integer from 0 to 2^53-1, got %s", name, clip(string(v)))
	}
	*dst = n
	return nil
}

// stringField decodes a string member; share, when not nil, may return an
// existing string equal to the raw bytes instead of allocating one.
func stringField(dst *string, name string, v []byte, share func([]byte) string) error {
	if len(v) < 2 || v[0] != '"' {
		return envelopeError("%s must be a string, got %s", name, clip(string(v)))
	}
	raw := v[1 : len(v)-1]
	if share != nil && !hasBackslash(raw) {
		*dst = share(raw)
		return nil
	}
	*dst = unquote(raw)
	return nil
}

// kindField returns the constant for a known kind, so a million events do
// not hold a million copies of "assistant".
func kindField(dst *Kind, v []byte) error {
	if len(v) >= 2 && v[0] == '"' {
		for _, x := range KnownKinds {
			if string(x) == string(v[1:len(v)-1]) {
				*dst = x
				return nil
			}
		}
	}
	var k string
	err := stringField(&k, "kind", v, nil)
	*dst = Kind(k)
	return err
}

// check applies the envelope rules of docs/FORMAT.md §7.2 to the fields.
func (e *Event) check() error {
	if err := checkMachine(e.Machine); err != nil {
		return err
	}
	if err := e.checkNumbers(); err != nil {
		return err
	}
	if e.Seq == 1 && e.Prev != "" {
		return envelopeError("seq 1 must have no prev")
	}
	if e.Seq > 1 && !isDigest(e.Prev) {
		return envelopeError("seq %d must have a prev that is a sha256 digest, got %q", e.Seq, clip(e.Prev))
	}
	if e.Time != "" && !ValidTime(e.Time) {
		return envelopeError("time %q is not RFC 3339 UTC (2006-01-02T15:04:05Z)", clip(e.Time))
	}
	if e.Kind == "" || len(e.Kind) > 64 || hasControl(string(e.Kind)) {
		return envelopeError("kind %q must be 1 to 64 printable bytes", clip(string(e.Kind)))
	}
	if len(e.Body) == 0 {
		return envelopeError("missing member \"body\"")
	}
	return nil
}

func (e *Event) checkNumbers() error {
	switch {
	case e.Seq < 1 || e.Seq > MaxInt:
		return envelopeError("seq must be from 1 to 2^53-1, got %d", e.Seq)
	case e.Clock < 1 || e.Clock > MaxInt:
		return envelopeError("clock must be from 1 to 2^53-1, got %d", e.Clock)
	case e.Epoch > MaxInt:
		return envelopeError("epoch must be at most 2^53-1, got %d", e.Epoch)
	case e.V < 1 || e.V > MaxInt:
		return envelopeError("v must be from 1 to 2^53-1, got %d", e.V)
	}
	return nil
}

func checkMachine(m string) error {
	if m == "" || len(m) > 256 || hasControl(m) {
		return envelopeError("machine %q must be 1 to 256 printable bytes", clip(m))
	}
	return nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

func isDigest(s string) bool {
	return len(s) > 7 && s[:7] == "sha256:" && digest.IsHex(s[7:])
}

// ValidTime reports whether s has the form the journal stores wall times in:
// RFC 3339 in UTC, "2006-01-02T15:04:05Z" with an optional fraction of 1 to 9
// digits. The journal never interprets it.
func ValidTime(s string) bool { return validTime(s) }

func validTime[T string | []byte](s T) bool {
	const layout = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(layout)+1 || s[len(s)-1] != 'Z' {
		return false
	}
	for i := 0; i < len(layout); i++ {
		if c := s[i]; layout[i] == 'd' && (c < '0' || c > '9') || layout[i] != 'd' && c != layout[i] {
			return false
		}
	}
	frac := s[len(layout) : len(s)-1]
	if len(frac) == 0 {
		return true
	}
	if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
		return false
	}
	for i := 1; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return false
		}
	}
	return true
}

// checkID hashes the line without its id member and compares.
func checkID(line []byte, spans []span, idAt int, id string) error {
	a, b := withoutMember(line, spans, idAt)
	h := sha256.New()
	h.Write(a)
	h.Write(b)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], sum[:])
	if id[7:] != string(hx[:]) {
		if !isDigest(id) {
			return envelopeError("id %q is not a sha256 digest", clip(id))
		}
		return &IDError{Got: id, Want: "sha256:" + string(hx[:])}
	}
	return nil
}

// withoutMember returns the line with member k removed, as two pieces.
func withoutMember(line []byte, spans []span, k int) ([]byte, []byte) {
	if len(spans) == 1 {
		return line[:1], line[len(line)-1:]
	}
	if k < len(spans)-1 {
		return line[:spans[k].start], line[spans[k+1].start:]
	}
	return line[:spans[k-1].end], line[spans[k].end:]
}

// Encode returns the canonical line of e, without the trailing newline. For
// an event read from a line this release cannot re-encode (Raw set) it
// returns that line unchanged. The result must not be modified.
func Encode(e Event) []byte {
	if e.Raw != nil {
		return e.Raw
	}
	return appendEnvelope(make([]byte, 0, len(e.Body)+300), &e, true)
}

// AppendEncode appends the line of e (see Encode) to dst.
func AppendEncode(dst []byte, e *Event) []byte {
	if e.Raw != nil {
		return append(dst, e.Raw...)
	}
	return appendEnvelope(dst, e, true)
}

// appendEnvelope writes the members in their canonical order: body, clock,
// epoch, id, kind, machine, prev, seq, time, v. Body must be canonical.
func appendEnvelope(dst []byte, e *Event, withID bool) []byte {
	dst = append(dst, `{"body":`...)
	dst = append(dst, e.Body...)
	dst = append(dst, `,"clock":`...)
	dst = strconv.AppendUint(dst, e.Clock, 10)
	dst = append(dst, `,"epoch":`...)
	dst = strconv.AppendUint(dst, e.Epoch, 10)
	if withID {
		dst = append(dst, `,"id":`...)
		dst = appendQuoted(dst, e.ID)
	}
	dst = append(dst, `,"kind":`...)
	dst = appendQuoted(dst, string(e.Kind))
	dst = append(dst, `,"machine":`...)
	dst = appendQuoted(dst, e.Machine)
	if e.Prev != "" {
		dst = append(dst, `,"prev":`...)
		dst = appendQuoted(dst, e.Prev)
	}
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	if e.Time != "" {
		dst = append(dst, `,"time":`...)
		dst = appendQuoted(dst, e.Time)
	}
	dst = append(dst, `,"v":`...)
	dst = strconv.AppendInt(dst, int64(e.V), 10)
	return append(dst, '}')
}

// Seal canonicalizes e.Body and sets e.ID to the hash of the event's
// canonical bytes without the id. It checks the envelope rules first. It
// clears Raw: Seal builds a new line from the fields, so it is for events
// this release writes, never for re-sealing an event read from elsewhere.
func Seal(e *Event) error {
	e.ID = ""
	if len(e.Body) == 0 {
		return envelopeError("missing member \"body\"")
	}
	if !isCanonical(e.Body) { // most bodies come canonical already: skip the tree
		body, err := Canonicalize(e.Body)
		if err != nil {
			return fmt.Errorf("seal: body: %w", err)
		}
		e.Body = body
	}
	if err := e.check(); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	e.Raw = nil
	e.ID = string(digest.FromBytes(appendEnvelope(make([]byte, 0, len(e.Body)+256+len(e.Machine)), e, false)))
	return nil
}

// isCanonical reports whether b is one JSON value in canonical form.
func isCanonical(b []byte) bool {
	s := scanner{b: b}
	return s.value(0) == nil && s.i == len(b)
}

// ComputeID returns the id e should carry: the hash of its canonical bytes
// without the id member. It returns an error only for an event whose Raw
// line does not parse.
func ComputeID(e *Event) (string, error) {
	if e.Raw == nil {
		return string(digest.FromBytes(appendEnvelope(make([]byte, 0, len(e.Body)+256+len(e.Machine)), e, false))), nil
	}
	var buf [16]span
	s := scanner{b: e.Raw}
	spans, err := s.topLevel(buf[:0])
	if err != nil {
		return "", err
	}
	for i, sp := range spans {
		if string(sp.name) == "id" {
			a, b := withoutMember(e.Raw, spans, i)
			return string(digest.FromBytes(append(bytes.Clone(a), b...))), nil
		}
	}
	return "", envelopeError("missing member \"id\"")
}
