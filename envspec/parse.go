package envspec

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/agentcapsule/capsule/schema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaJSON is the JSON Schema of version 1 of spec.json (FORMAT §6.1),
// which a version-1 file must satisfy before it is migrated.
//
//go:embed spec.schema.json
var SchemaJSON []byte

// SchemaURL is the $id of SchemaJSON.
const SchemaURL = "https://agentcapsule.dev/schema/environment/v1.json"

// Problem is one thing wrong with a spec.
type Problem struct {
	// Where is a JSON pointer ("/sandbox/network") or "line:col".
	Where string
	Msg   string
}

// String formats p as "where: msg".
func (p Problem) String() string {
	if p.Where == "" {
		return p.Msg
	}
	return p.Where + ": " + p.Msg
}

// ParseError lists every problem found in a spec.
type ParseError struct {
	Problems []Problem
	// Err is the secret-rule error of the first secret problem, if any, so
	// errors.Is(err, ErrSecretName), ErrSecretValue and ErrConflict work.
	Err error
}

// Error joins the problems on one line.
func (e *ParseError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	if len(parts) == 1 {
		return "envspec: " + parts[0]
	}
	return fmt.Sprintf("envspec: %d problems: %s", len(parts), strings.Join(parts, "; "))
}

// Unwrap returns ErrInvalid and, if there was one, the secret-rule error.
func (e *ParseError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(SchemaURL)
})

// Parse decodes and validates spec.json: size limit, JSON syntax (with
// line:column), duplicate keys, the JSON Schema of the file's version, and
// the secret rules. A version-1 file is checked against version 1's schema
// and migrated in memory through package schema's step (FORMAT §11.4), so
// the result is always version 2; ReadVersion says what the file holds. A
// *ParseError lists every problem; no message ever contains a value.
func Parse(data []byte) (*Spec, error) {
	if len(data) > MaxSize {
		return nil, &ParseError{Problems: []Problem{{Msg: fmt.Sprintf("%d bytes, the limit is %d", len(data), MaxSize)}}}
	}
	if p, ok := checkSyntax(data); !ok {
		return nil, &ParseError{Problems: []Problem{p}}
	}
	if v, _ := ReadVersion(data); v == 1 {
		if probs := schemaProblems(compiled, data); len(probs) > 0 {
			return nil, &ParseError{Problems: probs}
		}
		up, err := schema.Up(schema.Environment, 1, Version, data)
		if err != nil {
			return nil, &ParseError{Problems: []Problem{{Msg: err.Error()}}}
		}
		data = up
	}
	if probs := schemaProblems(compiledV2, data); len(probs) > 0 {
		return nil, &ParseError{Problems: probs}
	}
	s := &Spec{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil { // the schema already matched, so this is rare
		return nil, &ParseError{Problems: []Problem{{Msg: strings.TrimPrefix(err.Error(), "json: ")}}}
	}
	if err := s.semantic(); err != nil {
		return nil, err
	}
	return s, nil
}

// ReadVersion returns the version member of a spec.json without checking
// anything else; a file without one is version 1 (FORMAT §11.1).
func ReadVersion(data []byte) (int, error) {
	var head struct {
		Version *json.Number `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if head.Version == nil {
		return 1, nil
	}
	n, err := head.Version.Int64()
	if err != nil || n < 0 || n > 1<<30 {
		return 0, fmt.Errorf("%w: version %s is not a version number", ErrInvalid, clip(head.Version.String()))
	}
	return int(n), nil
}

// Validate checks s against the JSON Schema and the secret rules.
func (s *Spec) Validate() error {
	data, err := json.Marshal(s.normalized())
	if err != nil {
		return fmt.Errorf("envspec: validate: %w", err)
	}
	if probs := schemaProblems(compiledV2, data); len(probs) > 0 {
		return &ParseError{Problems: probs}
	}
	return s.semantic()
}

// schemaProblems validates data (valid JSON) against the schema compile gives.
func schemaProblems(compile func() (*jsonschema.Schema, error), data []byte) []Problem {
	sch, err := compile()
	if err != nil {
		return []Problem{{Msg: "the embedded JSON Schema does not compile: " + err.Error()}}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return []Problem{{Msg: err.Error()}}
	}
	var ve *jsonschema.ValidationError
	if err := sch.Validate(inst); errors.As(err, &ve) {
		var out []Problem
		leaves(ve, nil, &out)
		return out
	} else if err != nil {
		return []Problem{{Msg: err.Error()}}
	}
	return nil
}

var printer = message.NewPrinter(language.English)

// leaves collects the innermost causes, which say what is actually wrong.
// The location of a property-name cause is unreliable in jsonschema v6.0.3
// (its slice is shared with a sibling's), so beneath one the location of the
// object holding the name is kept.
func leaves(e *jsonschema.ValidationError, loc []string, out *[]Problem) {
	_, isName := e.ErrorKind.(*kind.PropertyNames)
	if loc == nil || !isName && len(e.InstanceLocation) >= len(loc) {
		loc = e.InstanceLocation
	}
	if len(e.Causes) == 0 {
		*out = append(*out, Problem{Where: "/" + strings.Join(loc, "/"), Msg: e.ErrorKind.LocalizedString(printer)})
		return
	}
	for _, c := range e.Causes {
		leaves(c, loc, out)
	}
}

// semantic applies the rules a JSON Schema cannot express.
func (s *Spec) semantic() error {
	var probs []Problem
	var first error
	add := func(where string, err error) {
		probs = append(probs, Problem{Where: where, Msg: strings.TrimPrefix(err.Error(), "envspec: ")})
		if first == nil && (errors.Is(err, ErrSecretName) || errors.Is(err, ErrSecretValue) || errors.Is(err, ErrConflict)) {
			first = err
		}
	}
	checkEnv("/env", s.Env, s.Secrets, add)
	seen := map[string]bool{}
	for i, t := range s.Tools {
		where := fmt.Sprintf("/mcp_servers/%d", i)
		if seen[t.Name] {
			add(where+"/name", fmt.Errorf("MCP server %q is listed twice", t.Name))
		}
		if r := CredentialReason(t.URL); t.URL != "" && r != "" {
			add(where+"/url", &SecretValueError{Name: "server " + t.Name + " url", Reason: r})
		}
		seen[t.Name] = true
		checkEnv(where+"/env", t.Env, t.Secrets, add)
		for j, a := range t.Args {
			if r := CredentialReason(a); r != "" {
				add(fmt.Sprintf("%s/args/%d", where, j), &SecretValueError{Name: "tool " + t.Name + " argument", Reason: r})
			}
		}
	}
	s.checkMemory(add)
	if s.Workdir != "" && (path.IsAbs(s.Workdir) || path.Clean(s.Workdir) != s.Workdir || strings.HasPrefix(s.Workdir, "..")) {
		add("/workdir", errors.New("must be a clean path relative to the workspace root, not leaving it"))
	}
	if len(probs) == 0 {
		return nil
	}
	return &ParseError{Problems: probs, Err: first}
}

func checkEnv(where string, env map[string]string, secrets []string, add func(string, error)) {
	names := make([]string, 0, len(env))
	for n := range env {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := CheckVar(n, env[n]); err != nil {
			add(where+"/"+n, err)
		}
		for _, s := range secrets {
			if s == n {
				add(where+"/"+n, fmt.Errorf("%w: %s", ErrConflict, n))
			}
		}
	}
}

// checkSyntax reports the first JSON syntax error or duplicate key with its
// line and column.
func checkSyntax(data []byte) (Problem, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	err := walk(dec)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = posError{int(dec.InputOffset()), "extra data after the JSON value"}
		}
	}
	if err == nil {
		return Problem{}, true
	}
	var pe posError
	var se *json.SyntaxError
	off := len(data)
	msg := "JSON syntax: unexpected end of input"
	switch {
	case errors.As(err, &pe):
		off, msg = pe.off, pe.msg
		for off < len(data) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
			off++
		}
	case errors.As(err, &se):
		off, msg = int(se.Offset), "JSON syntax: "+se.Error()
	}
	l, c := lineCol(data, off)
	return Problem{Where: fmt.Sprintf("%d:%d", l, c), Msg: msg}, false
}

type posError struct {
	off int
	msg string
}

func (e posError) Error() string { return e.msg }

func walk(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		if d == '{' {
			off := int(dec.InputOffset())
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k := kt.(string)
			if seen[k] {
				return posError{off, fmt.Sprintf("duplicate key %q", clip(k))}
			}
			seen[k] = true
		}
		if err := walk(dec); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

func lineCol(data []byte, off int) (int, int) {
	if off > len(data) {
		off = len(data)
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return line, off - bytes.LastIndexByte(data[:off], '\n')
}
