package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

// checkArgs decodes args for the tool named name and validates them
// against its schema, returning the decoded object or a message for the
// model saying what is wrong. Empty arguments read as {} (some providers
// send nothing for a call without arguments).
func checkArgs(name string, args json.RawMessage) (map[string]any, string) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		return nil, fmt.Sprintf("%s: the arguments are not valid JSON: %s", name, short(string(args), 200))
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return nil, fmt.Sprintf("%s: the arguments are not valid JSON: %v", name, err)
	}
	obj, ok := inst.(map[string]any)
	if !ok {
		return nil, fmt.Sprintf("%s: the arguments must be a JSON object, got %s", name, short(string(args), 200))
	}
	schemas, err := compiled()
	if err != nil {
		return nil, err.Error()
	}
	if err := schemas[name].Validate(obj); err != nil {
		return nil, fmt.Sprintf("%s: invalid arguments: %s", name, describe(err))
	}
	return obj, ""
}

// describe lists a validation error's leaf causes, one per problem, as
// "at /prop: message", in a stable order.
func describe(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, fmt.Sprintf("at /%s: %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(printer)))
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// short cuts s to at most n bytes at a rune boundary, marking the cut.
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
