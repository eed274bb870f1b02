package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/agentcapsule/capsule/render"
)

// Violation is one broken request rule: the HTTP status the provider
// answers it with and its message, worded as the provider words it
// (reference §2).
type Violation struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
	// Code is the provider's error code where it sends one (OpenAI's
	// "code"), else empty.
	Code string `json:"code,omitempty"`
}

// Error returns the message.
func (v Violation) Error() string { return v.Message }

// Check checks a request body against the hard rules of the target's API
// (reference §1) and returns every violation in the order found; none if
// the body passes. It reads the JSON generically, so it checks the bytes
// that go on the wire, not a renderer's structures. The rules depend on
// the target's capabilities (render.Target.Capabilities).
func Check(t render.Target, body []byte) []Violation {
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return []Violation{{Status: http.StatusBadRequest, Message: "We could not parse the JSON body of your request: " + err.Error()}}
	}
	c := &checker{caps: t.Capabilities()}
	switch t.API {
	case render.OpenAIChat:
		c.chat(v)
	case render.OpenAIResponses:
		c.responses(v)
	case render.Anthropic:
		c.anthropic(v)
	case render.Gemini:
		c.gemini(v)
	case render.Ollama:
		c.ollama(v)
	default:
		c.fail("unknown API %q", t.API)
	}
	return c.errs
}

// Validate is Check with the violations joined into one error, nil if
// the body passes.
func Validate(t render.Target, body []byte) error {
	vs := Check(t, body)
	errs := make([]error, len(vs))
	for i, v := range vs {
		errs[i] = v
	}
	return errors.Join(errs...)
}

type checker struct {
	caps render.Caps
	errs []Violation
}

// fail records a violation the provider answers with 400.
func (c *checker) fail(format string, args ...any) {
	c.failStatus(http.StatusBadRequest, format, args...)
}

// failStatus records a violation answered with status.
func (c *checker) failStatus(status int, format string, args ...any) {
	c.errs = append(c.errs, Violation{Status: status, Message: fmt.Sprintf(format, args...)})
}

// Generic accessors over decoded JSON.

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int64 {
	n, _ := v.(json.Number)
	i, _ := n.Int64()
	return i
}

// Tool-name patterns: Anthropic's (reference, additions), OpenAI's
// ("a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum
// length of 64", openai-go FunctionDefinitionParam) and Gemini's ("start
// with a letter or an underscore ... underscores, dots, colons and
// dashes, with a maximum length of 128", genai FunctionDeclaration).
var (
	anthropicName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	openaiName    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	geminiName    = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`)
)

// checkOpenAIName applies OpenAI's function-name rule.
func (c *checker) checkOpenAIName(where, name string) {
	switch {
	case len(name) > 64:
		c.fail("Invalid '%s': string too long. Expected a string with maximum length 64, but got a string with length %d instead.", where, len(name))
	case !openaiName.MatchString(name):
		c.fail("Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", where)
	}
}

// checkGeminiName applies Gemini's function-name rule.
func (c *checker) checkGeminiName(where, name string) {
	if !geminiName.MatchString(name) {
		c.fail("Invalid function name %q at '%s'. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, colons and dashes, with a maximum length of 128.", name, where)
	}
}

var (
	anthropicID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	openaiID    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,40}$`)
	mistralID   = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
)

// checkID applies the target's ID rule to a call ID.
func (c *checker) checkID(where, id string) {
	switch c.caps.IDRule {
	case render.IDMistral:
		if !mistralID.MatchString(id) {
			c.fail("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", id)
		}
	case render.IDOpenAI:
		if !openaiID.MatchString(id) {
			c.fail("Invalid '%s': string too long or invalid. Expected a string matching '^[a-zA-Z0-9_-]{1,40}$', but got %q instead.", where, id)
		}
	case render.IDAnthropic:
		if !anthropicID.MatchString(id) {
			c.fail("%s: String should match pattern '^[a-zA-Z0-9_-]+$'", where)
		}
	default:
		if id == "" {
			c.fail("%s: tool call id must be non-empty", where)
		}
	}
}

// isJSONObjectText reports whether s is the text of a JSON object (not
// null, an array or a scalar).
func isJSONObjectText(s string) bool {
	var m map[string]any
	return strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") && json.Unmarshal([]byte(s), &m) == nil
}

// checkArguments applies the rule of OpenAI Chat and Responses (and of
// strict OpenAI-compatible servers that validate history) to a call's
// arguments: a string holding a JSON-encoded object.
func (c *checker) checkArguments(where string, args any) {
	s, ok := args.(string)
	if !ok {
		c.fail("Invalid type for '%s': expected a string, but got an object instead.", where)
		return
	}
	if !isJSONObjectText(s) {
		c.fail("Invalid '%s': the function arguments must be a JSON-encoded object, got %q.", where, s)
	}
}
