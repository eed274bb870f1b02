package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/sandbox"
)

// Defaults of Options.
const (
	DefaultMaxOutput    = 16 << 10
	DefaultMaxFileBytes = 8 << 20
	// MaxMemoryBytes bounds the working memory the memory tool writes when
	// Options.MaxMemoryBytes is zero (envspec.DefaultWorkingMaxBytes).
	MaxMemoryBytes = 64 << 10
)

// Options configures a Workspace. The zero value is usable: defaults apply
// to zero limits, and there is no memory tool.
type Options struct {
	// MaxOutput is the most bytes of output a Result's Content carries
	// before it is cut (DefaultMaxOutput when zero); the memory tool's
	// output is cut at the memory's limit at the earliest, so the model
	// always sees its whole working memory.
	MaxOutput int
	// MemoryFile is the absolute path of the capsule's
	// memory/working_memory.md. Empty: the memory tool is not offered.
	MemoryFile string
	// MaxMemoryBytes is the largest working memory the memory tool writes
	// (the spec's memory.working_max_bytes; MaxMemoryBytes when zero).
	MaxMemoryBytes int
	// Recall searches the agent's memory index. Nil: memory_search is not
	// offered.
	Recall Recall
	// MaxFileBytes is the largest file read_file and edit_file read and
	// write_file writes; search skips bigger files (DefaultMaxFileBytes
	// when zero).
	MaxFileBytes int64
	// Sandbox runs the run tool's commands (run.go). Nil: the run tool is
	// not offered, and a call is refused with the reason.
	Sandbox *sandbox.Sandbox
	// Policy is the sandbox policy of the run tool; its Workspace is this
	// workspace's directory whatever it says.
	Policy sandbox.Policy
}

// Workspace runs the built-in tools on one directory, the agent's
// workspace; no tool reaches a file outside it.
type Workspace struct {
	root    *os.Root
	dir     string   // the absolute path of the workspace, for the sandbox
	memRoot *os.Root // the memory file's directory, nil without a memory tool
	memName string
	opts    Options
}

// OpenWorkspace opens the directory dir for the tools, with o's limits.
func OpenWorkspace(dir string, o Options) (*Workspace, error) {
	if _, err := compiled(); err != nil {
		return nil, err
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("tool: open workspace: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("tool: open workspace: %w", err)
	}
	if o.MaxMemoryBytes <= 0 {
		o.MaxMemoryBytes = MaxMemoryBytes
	}
	w := &Workspace{root: root, dir: abs, opts: o}
	if o.MemoryFile != "" {
		if !filepath.IsAbs(o.MemoryFile) {
			root.Close()
			return nil, fmt.Errorf("tool: memory file %q is not an absolute path", o.MemoryFile)
		}
		if w.memRoot, err = os.OpenRoot(filepath.Dir(o.MemoryFile)); err != nil {
			root.Close()
			return nil, fmt.Errorf("tool: open memory directory: %w", err)
		}
		w.memName = filepath.Base(o.MemoryFile)
	}
	return w, nil
}

// Close releases the workspace's directories.
func (w *Workspace) Close() error {
	err := w.root.Close()
	if w.memRoot != nil {
		if e := w.memRoot.Close(); err == nil {
			err = e
		}
	}
	return err
}

// Tools returns the tools to offer the model, in a fixed order: read_file,
// list_files, search, write_file, edit_file, memory when the workspace
// has a memory file, memory_search when it has a Recall, and run when it
// has a sandbox.
func (w *Workspace) Tools() []render.Tool {
	var out []render.Tool
	for _, s := range specs {
		if s.name == Memory {
			s.desc = memoryDescription(w.opts.MaxMemoryBytes)
		}
		if w.offers(s.name) {
			out = append(out, s.declaration())
		}
	}
	return append(out, w.runDeclaration()...)
}

func (w *Workspace) offers(name string) bool {
	switch name {
	case Memory:
		return w.memRoot != nil
	case MemorySearch:
		return w.opts.Recall != nil
	}
	return Effect(name) != ""
}

// runner runs one tool on arguments its schema accepted.
type runner func(w *Workspace, ctx context.Context, args json.RawMessage) Result

var runners = map[string]runner{
	ReadFile: (*Workspace).readFile, ListFiles: (*Workspace).listFiles, Search: (*Workspace).search,
	WriteFile: (*Workspace).writeFile, EditFile: (*Workspace).editFile, Memory: (*Workspace).memory,
	MemorySearch: (*Workspace).memorySearch,
}

// Run runs the tool name with the JSON arguments args. Every problem,
// including an unknown tool and arguments that are not an object valid
// under the tool's schema, is a Result with IsError set whose Content says
// what is wrong; Run never panics.
func (w *Workspace) Run(ctx context.Context, name string, args json.RawMessage) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = failf("%s: internal error: %v", name, p)
		}
	}()
	if name == RunCommand {
		return w.run(ctx, args)
	}
	if !w.offers(name) {
		return failf("unknown tool %q; the tools are: %s", short(name, 100), strings.Join(w.names(), ", "))
	}
	obj, msg := checkArgs(name, args)
	if msg != "" {
		return capped(failf("%s", msg), w.opts.MaxOutput)
	}
	if err := ctx.Err(); err != nil {
		return failf("%s: not run: %v", name, err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return failf("%s: arguments: %v", name, err)
	}
	limit := w.opts.MaxOutput
	if name == Memory { // the model sees all of its working memory
		limit = max(limit, w.opts.MaxMemoryBytes)
	}
	r = capped(runners[name](w, ctx, b), limit)
	if h := readOn[name]; r.Full != nil && !r.IsError && h != "" {
		r.Content += "\n" + h
	}
	return r
}

// readOn tells the model, after a cut, how to see the rest itself: it
// cannot read the attachment.
var readOn = map[string]string{
	ReadFile: "Use offset and limit to read the rest.", ListFiles: "List a subdirectory to see the rest.",
	Search: "Narrow the pattern, path or glob to see the rest.",
}

func (w *Workspace) names() []string {
	var out []string
	for _, s := range specs {
		if w.offers(s.name) {
			out = append(out, s.name)
		}
	}
	if ok, _ := w.runOffered(); ok {
		out = append(out, RunCommand)
	}
	return out
}

// decode reads validated arguments into v; a failure (a number too large
// for an int) is a message for the model.
func decode(name string, args json.RawMessage, v any) string {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Sprintf("%s: invalid arguments: %v", name, err)
	}
	return ""
}
