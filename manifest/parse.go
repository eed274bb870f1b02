package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentcapsule/capsule/schema"
)

// Sentinel errors callers branch on.
var (
	// ErrInvalid marks a manifest that is not well formed; the error is a
	// *ParseError naming every problem.
	ErrInvalid = errors.New("manifest: invalid")
	// ErrTooLarge marks a manifest larger than MaxSize.
	ErrTooLarge = errors.New("manifest: too large")
	// ErrUnsupported marks a manifest (or a kind of state it lists) whose
	// version this release cannot read; the error is a *VersionError.
	ErrUnsupported = errors.New("manifest: unsupported version")
)

// Problem is one thing wrong with a manifest.
type Problem struct {
	// Field is the JSON path of the member, e.g. "files[2].digest"; empty
	// for the document as a whole.
	Field string
	// Line and Column locate the problem in the input, 1-based; zero when
	// the problem is about a value rather than a position.
	Line, Column int
	// Msg says what is wrong.
	Msg string
}

// String formats p as "line:col: field: msg", leaving out what is unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", p.Line, p.Column)
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// ParseError lists every problem Parse or Validate found.
type ParseError struct {
	Problems []Problem
}

// Error joins the problems on one line.
func (e *ParseError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	if len(parts) == 1 {
		return "manifest: " + parts[0]
	}
	return fmt.Sprintf("manifest: %d problems: %s", len(parts), strings.Join(parts, "; "))
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ParseError) Unwrap() error { return ErrInvalid }

// VersionError says which version of which kind this release cannot read.
type VersionError struct {
	// Kind is "manifest" for the format itself, else a schema.Kind.
	Kind string
	// Got is the version found; Max the newest this release reads.
	Got, Max int
	// Writer is the release the manifest names as its writer, "" if it
	// names none that can be read.
	Writer string
}

// Error explains the refusal, naming the writer release when known, and
// what to do about it.
func (e *VersionError) Error() string {
	by := ""
	if e.Writer != "" {
		by = " (written by " + e.Writer + ")"
	}
	if e.Got > e.Max {
		return fmt.Sprintf("manifest: %s schema version %d%s is newer than this release (%s) reads (up to %d); upgrade capsule", e.Kind, e.Got, by, schema.Release, e.Max)
	}
	return fmt.Sprintf("manifest: %s schema version %d%s is not a version this release (%s) reads (1 to %d)", e.Kind, e.Got, by, schema.Release, e.Max)
}

// writerRelease returns the release a manifest's bytes name as writer, or
// "" (it is read leniently, only to name it in a refusal).
func writerRelease(data []byte) string {
	var w struct {
		Writer struct {
			Release string `json:"release"`
		} `json:"writer"`
	}
	if json.Unmarshal(data, &w) != nil {
		return ""
	}
	return safeRelease(w.Writer.Release)
}

// safeRelease returns r if it looks like a release string (at most 64
// letters, digits, '.', '-' and '+'), else "": an outside string reaches an
// error message only when it cannot carry control characters or markup.
func safeRelease(r string) string {
	if len(r) > 64 {
		return ""
	}
	for _, c := range r {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '-' || c == '+') {
			return ""
		}
	}
	return r
}

// Unwrap makes errors.Is(err, ErrUnsupported) true.
func (e *VersionError) Unwrap() error { return ErrUnsupported }

// topLevel lists the members a format-1 manifest may have.
var topLevel = []string{"format", "agent", "holder", "schemas", "writer", "journal", "files", "extensions"}

// Parse decodes and validates manifest.json. It rejects input over MaxSize,
// invalid JSON (with line:column), duplicate keys, unknown members outside
// "extensions", a newer format (*VersionError) and every violation of
// FORMAT §2; a *ParseError lists all the problems found, not only the first.
func Parse(data []byte) (*Manifest, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), MaxSize)
	}
	if p, ok := checkSyntax(data); !ok {
		return nil, &ParseError{Problems: []Problem{p}}
	}
	members, probs := splitTopLevel(data)
	if err := checkFormat(data, members); err != nil {
		return nil, err
	}
	if len(probs) > 0 {
		return nil, &ParseError{Problems: probs}
	}
	m := &Manifest{}
	probs = decodeMembers(data, members, m)
	if len(probs) == 0 {
		probs = m.problems()
	}
	if len(probs) > 0 {
		return nil, &ParseError{Problems: probs}
	}
	return m, nil
}

// member is the raw value of one top-level member and where it starts.
type member struct {
	raw   json.RawMessage
	start int
}

// checkSyntax walks every token, reporting the first syntax error or
// duplicate key with its position, and a document that is not an object.
func checkSyntax(data []byte) (Problem, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	first := true
	err := walk(dec, "", &first)
	if err == nil {
		if _, terr := dec.Token(); terr == nil {
			err = posError{int(dec.InputOffset()), "", "extra data after the top-level object"}
		}
	}
	if err == nil {
		return Problem{}, true
	}
	var pe posError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &pe):
		l, c := lineCol(data, skipToValue(data, pe.off))
		return Problem{Field: pe.field, Line: l, Column: c, Msg: pe.msg}, false
	case errors.As(err, &se):
		l, c := lineCol(data, int(se.Offset))
		return Problem{Line: l, Column: c, Msg: "JSON syntax: " + se.Error()}, false
	case errors.Is(err, errEOF):
		l, c := lineCol(data, len(data))
		return Problem{Line: l, Column: c, Msg: "JSON syntax: unexpected end of input"}, false
	default:
		return Problem{Msg: "JSON syntax: " + err.Error()}, false
	}
}

var errEOF = errors.New("unexpected end")

type posError struct {
	off   int
	field string
	msg   string
}

func (e posError) Error() string { return e.msg }

// walk reads one value. It rejects a duplicate key in any object, and a
// top-level value that is not an object.
func walk(dec *json.Decoder, path string, top *bool) error {
	off := int(dec.InputOffset())
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errEOF
		}
		return err
	}
	d, isDelim := tok.(json.Delim)
	if *top {
		*top = false
		if !isDelim || d != '{' {
			return posError{off, "", "the manifest must be a JSON object"}
		}
	}
	if !isDelim {
		return nil
	}
	if d == '[' {
		for i := 0; dec.More(); i++ {
			if err := walk(dec, fmt.Sprintf("%s[%d]", path, i), top); err != nil {
				return err
			}
		}
	} else {
		seen := map[string]bool{}
		for dec.More() {
			koff := int(dec.InputOffset())
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			field := joinField(path, k)
			if seen[k] {
				return posError{koff, field, "duplicate key"}
			}
			seen[k] = true
			if err := walk(dec, field, top); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return err
	}
	return nil
}

func joinField(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// splitTopLevel returns each top-level member, reporting every unknown one.
func splitTopLevel(data []byte) (map[string]member, []Problem) {
	dec := json.NewDecoder(bytes.NewReader(data))
	out := map[string]member{}
	var probs []Problem
	if _, err := dec.Token(); err != nil { // '{', checked by checkSyntax
		return nil, []Problem{{Msg: err.Error()}}
	}
	for dec.More() {
		koff := int(dec.InputOffset())
		kt, err := dec.Token()
		if err != nil {
			return nil, []Problem{{Msg: err.Error()}}
		}
		k := kt.(string)
		var raw json.RawMessage
		after := int(dec.InputOffset())
		if err := dec.Decode(&raw); err != nil {
			return nil, []Problem{{Field: k, Msg: err.Error()}}
		}
		if !known(k) {
			l, c := lineCol(data, skipToValue(data, koff))
			probs = append(probs, Problem{Field: k, Line: l, Column: c, Msg: `unknown member (put extensions under "extensions")`})
			continue
		}
		out[k] = member{raw: raw, start: skipToValue(data, after)}
	}
	return out, probs
}

func known(k string) bool {
	for _, t := range topLevel {
		if t == k {
			return true
		}
	}
	return false
}

// skipToValue moves off past whitespace, commas and the colon that precede a
// token, so it points at the token itself.
func skipToValue(data []byte, off int) int {
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ':', ',':
			off++
		default:
			return off
		}
	}
	return off
}

// checkFormat reads "format" first, so a newer manifest is refused for its
// version rather than for members this release does not know.
func checkFormat(data []byte, members map[string]member) error {
	mem, ok := members["format"]
	if !ok {
		return &ParseError{Problems: []Problem{{Field: "format", Msg: "missing (the manifest format version)"}}}
	}
	v, err := strconv.Atoi(string(mem.raw))
	if err != nil {
		l, c := lineCol(data, mem.start)
		return &ParseError{Problems: []Problem{{Field: "format", Line: l, Column: c, Msg: "must be an integer"}}}
	}
	if v < 1 || v > FormatVersion {
		return &VersionError{Kind: "manifest", Got: v, Max: FormatVersion, Writer: writerRelease(data)}
	}
	return nil
}

// decodeMembers decodes each known member strictly into m, collecting one
// problem per member that does not fit its type.
func decodeMembers(data []byte, members map[string]member, m *Manifest) []Problem {
	targets := map[string]any{
		"format": &m.Format, "agent": &m.Agent, "holder": &m.Holder, "schemas": &m.Schemas,
		"writer": &m.Writer, "journal": &m.Journal, "files": &m.Files, "extensions": &m.Extensions,
	}
	var probs []Problem
	for _, k := range topLevel {
		mem, ok := members[k]
		if !ok {
			if k != "extensions" {
				probs = append(probs, Problem{Field: k, Msg: "missing"})
			}
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(mem.raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(targets[k]); err != nil {
			probs = append(probs, decodeProblem(data, k, mem, err))
		}
	}
	for k, v := range m.Extensions {
		var b bytes.Buffer
		_ = json.Compact(&b, v) // v is valid JSON: checkSyntax passed
		m.Extensions[k] = b.Bytes()
	}
	return probs
}

// decodeProblem turns an encoding/json error into a located Problem.
func decodeProblem(data []byte, k string, mem member, err error) Problem {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := k
		if te.Field != "" {
			field = k + "." + te.Field
		}
		l, c := lineCol(data, mem.start+int(te.Offset))
		return Problem{Field: field, Line: l, Column: c, Msg: fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)}
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return Problem{Field: k, Msg: "unknown member " + name}
	}
	l, c := lineCol(data, mem.start)
	return Problem{Field: k, Line: l, Column: c, Msg: msg}
}

// lineCol converts a byte offset into a 1-based line and column (in bytes).
func lineCol(data []byte, off int) (int, int) {
	if off > len(data) {
		off = len(data)
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}
