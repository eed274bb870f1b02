package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// assignment matches key=value in a user request; value may be quoted
// (a bare value loses the sentence punctuation after it).
var assignment = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|[^\s,;]+)`)

// pathLike matches a token that looks like a file path.
var pathLike = regexp.MustCompile(`[A-Za-z0-9_./-]*[./][A-Za-z0-9_./-]+`)

// argsFor builds arguments for t from its JSON Schema and the request,
// and checks them against the schema. A property takes, in order: the
// request's key=value for its name, its const, first enum value or
// default, a path from the request (for a string property whose name
// says path or file), else the smallest value of its type within its
// bounds. Only required properties and those the request assigns are
// filled.
func argsFor(t tool, request string) (json.RawMessage, error) {
	var schema any = map[string]any{"type": "object"}
	if len(t.schema) > 0 && string(t.schema) != "null" {
		if err := json.Unmarshal(t.schema, &schema); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	schema = lowerTypes(schema)
	vals := map[string]string{}
	for _, m := range assignment.FindAllStringSubmatch(request, -1) {
		if v, ok := strings.CutPrefix(m[2], `"`); ok {
			vals[m[1]] = strings.TrimSuffix(v, `"`)
			continue
		}
		vals[m[1]] = strings.TrimRight(m[2], ".!?:)") // sentence punctuation after a bare value

	}
	g := gen{vals: vals, path: pathLike.FindString(request)}
	v := g.value(obj(schema), "")
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if obj(v) == nil {
		return nil, errors.New("the schema does not describe an object")
	}
	return b, validateArgs(schema, b)
}

// validateArgs checks b against schema.
func validateArgs(schema any, b []byte) error {
	sb, err := json.Marshal(schema)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sb))
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("tool.json", doc); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile("tool.json")
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("arguments %s do not validate: %w", b, err)
	}
	return nil
}

// lowerTypes lowercases "type" values (Gemini's Schema spells them
// "OBJECT", "STRING") so the schema reads as JSON Schema; numbers become
// float64 or stay as decoded.
func lowerTypes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "type" {
				x[k] = strings.ToLower(s)
				continue
			}
			x[k] = lowerTypes(e)
		}
	case []any:
		for i := range x {
			x[i] = lowerTypes(x[i])
		}
	}
	return v
}

type gen struct {
	vals map[string]string
	path string
}

func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if str(x) != "null" {
				return str(x)
			}
		}
	}
	if s["properties"] != nil {
		return "object"
	}
	return "string"
}

func (g gen) value(s map[string]any, name string) any {
	if v, ok := s["const"]; ok {
		return v
	}
	typ := schemaType(s)
	if v, ok := g.vals[name]; ok && name != "" {
		if x, ok := convert(v, typ); ok {
			return x
		}
	}
	if e := list(s["enum"]); len(e) > 0 {
		return e[0]
	}
	if v, ok := s["default"]; ok {
		return v
	}
	switch typ {
	case "object":
		return g.object(s)
	case "array":
		n := bounded(number(s["minItems"], 0), maxItems)
		items := obj(s["items"])
		out := make([]any, n)
		for i := range out {
			out[i] = g.value(items, name)
		}
		return out
	case "integer", "number":
		lo := number(s["minimum"], 0)
		if ex, ok := s["exclusiveMinimum"].(float64); ok {
			lo = ex + 1
		}
		if hi, ok := s["maximum"].(float64); ok && lo > hi {
			lo = hi
		}
		return lo
	case "boolean":
		return false
	case "null":
		return nil
	}
	return g.str(s, name)
}

func (g gen) object(s map[string]any) map[string]any {
	out := map[string]any{}
	props := obj(s["properties"])
	for _, r := range list(s["required"]) {
		out[str(r)] = g.value(obj(props[str(r)]), str(r))
	}
	for k := range g.vals {
		if p, ok := props[k]; ok {
			out[k] = g.value(obj(p), k)
		}
	}
	return out
}

func (g gen) str(s map[string]any, name string) string {
	v := "capsule-sim"
	lower := strings.ToLower(name)
	if g.path != "" && (strings.Contains(lower, "path") || strings.Contains(lower, "file")) {
		v = g.path
	}
	if n := bounded(number(s["minLength"], 0), maxString); len(v) < n {
		v += strings.Repeat("x", n-len(v))
	}
	if n, ok := s["maxLength"].(float64); ok && n >= 0 && len(v) > int(n) {
		v = v[:int(n)]
	}
	return v
}

// convert reads a request value as a value of a schema type.
func convert(v, typ string) (any, bool) {
	switch typ {
	case "integer", "number":
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	case "boolean":
		b, err := strconv.ParseBool(v)
		return b, err == nil
	case "string":
		return v, true
	}
	return nil, false
}

// Bounds on what a schema can make the planner build: a schema asking
// for more fails validation and the tool is not called.
const (
	maxItems  = 64
	maxString = 4096
)

// bounded returns f as an int in [0, hi].
func bounded(f float64, hi int) int {
	if f <= 0 || f != f {
		return 0
	}
	if f > float64(hi) {
		return hi
	}
	return int(f)
}

func number(v any, def float64) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return def
}
