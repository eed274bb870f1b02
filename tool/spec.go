package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/schema"
)

// The built-in tools' names.
const (
	ReadFile  = "read_file"
	ListFiles = "list_files"
	Search    = "search"
	WriteFile = "write_file"
	EditFile  = "edit_file"
	Memory    = "memory"
)

// spec is one built-in tool: its declaration and its effect class.
type spec struct {
	name   string
	effect string
	desc   string
	params string // a JSON Schema of an object
}

// specs lists the built-in tools in the order Tools offers them.
var specs = []spec{
	{ReadFile, schema.EffectRead,
		"Read a text file of the workspace. Each line of the output starts with its line number and a tab " +
			"(like `cat -n`); that prefix is not part of the file, so leave it out of edit_file's old_string. " +
			"offset is the first line to show (1-based) and limit the number of lines; by default the whole file. " +
			"Paths are relative to the workspace root.",
		`{"type":"object","properties":{` +
			`"path":{"type":"string","minLength":1,"description":"file path relative to the workspace root, e.g. src/main.go"},` +
			`"offset":{"type":"integer","minimum":1,"maximum":1000000000,"description":"first line to show, 1-based"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":1000000000,"description":"number of lines to show"}},` +
			`"required":["path"],"additionalProperties":false}`},
	{ListFiles, schema.EffectRead,
		"List a directory of the workspace, sorted by name; directories end with \"/\" and symbolic links show " +
			"their target after \" -> \". With recursive, list everything below it (not inside .git). Paths in the " +
			"output are relative to the workspace root and can be passed to the other tools.",
		`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"directory relative to the workspace root; default \".\""},` +
			`"recursive":{"type":"boolean","description":"also list subdirectories' contents"}},` +
			`"additionalProperties":false}`},
	{Search, schema.EffectRead,
		"Search the workspace's text files for a regular expression (Go RE2 syntax, e.g. `func \\w+\\(` or " +
			"`(?i)todo`), one line per match as \"path:line: text\". path limits the search to a directory or file; " +
			"glob limits it to file names matching a shell pattern (e.g. *.go; with a \"/\" it matches the whole " +
			"relative path). Binary files and .git are skipped.",
		`{"type":"object","properties":{` +
			`"pattern":{"type":"string","minLength":1,"description":"regular expression, Go RE2 syntax"},` +
			`"path":{"type":"string","description":"directory or file relative to the workspace root; default \".\""},` +
			`"glob":{"type":"string","description":"only files whose name matches this pattern, e.g. *.go"}},` +
			`"required":["pattern"],"additionalProperties":false}`},
	{WriteFile, schema.EffectWorkspace,
		"Create or replace a file of the workspace with content (the whole new file), creating missing parent " +
			"directories. The write is atomic: the file has either its old or its new content. To change part of " +
			"an existing file, prefer edit_file.",
		`{"type":"object","properties":{` +
			`"path":{"type":"string","minLength":1,"description":"file path relative to the workspace root"},` +
			`"content":{"type":"string","description":"the complete new content of the file"}},` +
			`"required":["path","content"],"additionalProperties":false}`},
	{EditFile, schema.EffectWorkspace,
		"Replace text in a file of the workspace: old_string must occur in the file exactly (the plain text, " +
			"without read_file's line-number prefixes, whitespace included) and exactly once, unless replace_all " +
			"is true; include surrounding lines to make it unique. new_string replaces it and must differ from it.",
		`{"type":"object","properties":{` +
			`"path":{"type":"string","minLength":1,"description":"file path relative to the workspace root"},` +
			`"old_string":{"type":"string","minLength":1,"description":"the exact text to replace"},` +
			`"new_string":{"type":"string","description":"the text to put in its place"},` +
			`"replace_all":{"type":"boolean","description":"replace every occurrence instead of exactly one"}},` +
			`"required":["path","old_string","new_string"],"additionalProperties":false}`},
	{Memory, schema.EffectWorkspace, memoryDescription(MaxMemoryBytes), memoryParams}, // memory.go
	{MemorySearch, schema.EffectRead, memorySearchDescription, memorySearchParams},    // memsearch.go
}

// Effect returns the effect class of the built-in tool name
// (schema.EffectRead or schema.EffectWorkspace), or "" when name is not
// one.
func Effect(name string) string {
	for _, s := range specs {
		if s.name == name {
			return s.effect
		}
	}
	return ""
}

// Names lists every built-in tool's name in the order Tools offers them.
func Names() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

// compiled holds each tool's schema, compiled once for every workspace.
var compiled = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	out := map[string]*jsonschema.Schema{}
	for _, s := range specs {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(s.params)))
		if err != nil {
			return nil, fmt.Errorf("tool: schema of %s: %w", s.name, err)
		}
		c := jsonschema.NewCompiler()
		url := s.name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("tool: schema of %s: %w", s.name, err)
		}
		if out[s.name], err = c.Compile(url); err != nil {
			return nil, fmt.Errorf("tool: schema of %s: %w", s.name, err)
		}
	}
	return out, nil
})

// declaration is s as the model sees it.
func (s spec) declaration() render.Tool {
	return render.Tool{Name: s.name, Description: s.desc, Parameters: json.RawMessage(s.params)}
}
