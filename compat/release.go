package compat

import (
	"fmt"
	"sort"

	"github.com/agentcapsule/capsule/schema"
)

// Range is the versions of one kind a release reads: from Floor up to
// Current, the version it writes.
type Range struct {
	Floor   int `json:"floor"`
	Current int `json:"current"`
}

// Builtin is a tool a release provides itself, with the effect class and
// approval rule it has when the spec names no rule for it (FORMAT §11.7.1).
type Builtin struct {
	Effect   string
	Approval string
}

// Release is what compat needs to know of one release: the versions of each
// kind it reads, its built-in tools, whether it serves the tools of the
// spec's MCP servers, and the tool renames it declares.
type Release struct {
	Name  string
	Reads map[schema.Kind]Range
	Tools map[string]Builtin
	// MCP is set for a release that starts the spec's MCP servers, so that
	// a name "server.tool" of one of them resolves (FORMAT §11.9.1). A
	// release without it serves no such call.
	MCP bool
	// Mappings are renames the release declares for built-in tools: a name
	// an older journal may hold, mapped to the name that serves it now.
	Mappings map[string]string
}

// counterTool is the built-in of the node's demo runner (node.CounterTool),
// in every release so far; it increments a counter file in the workspace.
const counterTool = "counter.increment"

// runTool is the sandboxed shell command of release 0.3.0 (issue 14). It
// can reach the hosts the spec allows, so its effect class is external;
// like every built-in it needs approval only when the spec says so.
const runTool = "run"

// memorySearchTool is the built-in search of the memory index (from 0.3.0).
const memorySearchTool = "memory_search"

func releaseTools() map[string]Builtin {
	return map[string]Builtin{counterTool: {Effect: schema.EffectWorkspace, Approval: schema.ApprovalNever}}
}

// workspaceTools are the agent's workspace tools (package tool), built in
// from release 0.2.0 on: they reach only the agent's workspace and its
// working memory, so they run without approval unless the spec says so.
// Package tool's tests check this table against tool.Effect.
var workspaceTools = map[string]string{
	"read_file": schema.EffectRead, "list_files": schema.EffectRead, "search": schema.EffectRead,
	"write_file": schema.EffectWorkspace, "edit_file": schema.EffectWorkspace, "memory": schema.EffectWorkspace,
}

// tools020 is release 0.2.0's built-in table: 0.1.0's and the workspace
// tools.
func tools020() map[string]Builtin {
	t := releaseTools()
	for name, effect := range workspaceTools {
		t[name] = Builtin{Effect: effect, Approval: schema.ApprovalNever}
	}
	return t
}

// currentTools is this release's built-in table: 0.2.0's, the run tool
// and memory_search.
func currentTools() map[string]Builtin {
	t := tools020()
	t[runTool] = Builtin{Effect: schema.EffectExternal, Approval: schema.ApprovalNever}
	t[memorySearchTool] = Builtin{Effect: schema.EffectRead, Approval: schema.ApprovalNever}
	return t
}

// Release010 is release 0.1.0 (commit c453eb8): every kind at version 1.
func Release010() Release {
	r := Release{Name: "0.1.0", Reads: map[schema.Kind]Range{}, Tools: releaseTools(), Mappings: map[string]string{}}
	for _, k := range schema.AllKinds() {
		r.Reads[k] = Range{Floor: 1, Current: 1}
	}
	return r
}

// Release020 is release 0.2.0 (docs/RELEASES.md): the environment spec and
// the memory index at version 2, the journal still at version 1 (it reads
// no version-2 line), the node record tool_mark, and the workspace tools;
// it starts no MCP server.
func Release020() Release {
	r := Release{Name: "0.2.0", Reads: map[schema.Kind]Range{}, Tools: tools020(), Mappings: map[string]string{}}
	for _, k := range schema.AllKinds() {
		r.Reads[k] = Range{Floor: 1, Current: 1}
	}
	r.Reads[schema.Environment] = Range{Floor: 1, Current: 2}
	r.Reads[schema.MemoryIndex] = Range{Floor: 1, Current: 2}
	return r
}

// Current is this build's release: the floors and written versions of the
// schema registry, the counter, workspace and run tools built in, and the
// tools of the spec's MCP servers.
func Current() Release {
	r := Release{Name: schema.Release, Reads: map[schema.Kind]Range{}, Tools: currentTools(), MCP: true, Mappings: map[string]string{}}
	for _, h := range schema.Histories() {
		r.Reads[h.Kind] = Range{Floor: h.Floor, Current: h.Current}
	}
	return r
}

// Releases lists every release docs/RELEASES.md names, oldest first.
func Releases() []Release { return []Release{Release010(), Release020(), Current()} }

// LookupRelease returns the release named name, or an error naming the
// releases there are.
func LookupRelease(name string) (Release, error) {
	var names []string
	for _, r := range Releases() {
		if r.Name == name {
			return r, nil
		}
		names = append(names, r.Name)
	}
	sort.Strings(names)
	return Release{}, fmt.Errorf("%w: %q (releases: %v)", ErrUnknownRelease, name, names)
}
