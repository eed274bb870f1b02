package compat

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/schema"
)

// jb builds a journal of one machine, event by event, at any envelope
// version: the journal package writes version 1 only, and these tests need
// the version-2 kinds nothing writes yet.
type jb struct {
	t     *testing.T
	buf   bytes.Buffer
	seq   uint64
	prev  string
	ids   map[string]string
	lines int
}

func newJournal(t *testing.T) *jb { return &jb{t: t, ids: map[string]string{}} }

// add appends an event and returns its id; name, when not "", keeps the id
// under that name for id().
func (b *jb) add(name string, v int, kind string, body any) string {
	b.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		b.t.Fatal(err)
	}
	b.seq++
	e := journal.Event{Machine: "m1", Seq: b.seq, Prev: b.prev, Clock: b.seq, Epoch: 1, V: v, Kind: journal.Kind(kind), Body: raw}
	if err := journal.Seal(&e); err != nil {
		b.t.Fatal(err)
	}
	b.buf.Write(journal.Encode(e))
	b.buf.WriteByte('\n')
	b.prev = e.ID
	if name != "" {
		b.ids[name] = e.ID
	}
	return e.ID
}

func (b *jb) id(name string) string {
	id, ok := b.ids[name]
	if !ok {
		b.t.Fatalf("no event named %q", name)
	}
	return id
}

func (b *jb) bytes() []byte { return b.buf.Bytes() }

var producer = map[string]string{"provider": "anthropic", "api": "anthropic", "model": "claude-sonnet-4-6"}

// The events of a tool call, at envelope version v.
func (b *jb) call(name string, v int, callID, tool string) string {
	return b.add(name, v, "tool_call", map[string]any{"call_id": callID, "name": tool, "arguments": map[string]any{}, "producer": producer})
}

func (b *jb) result(name string, v int, callID, tool string) string {
	return b.add(name, v, "tool_result", map[string]any{"call_id": callID, "name": tool, "content": "ok"})
}

func (b *jb) dispatch(name, callID, effect string) string {
	return b.add(name, 2, "tool_dispatch", schema.ToolDispatch{CallID: callID, Effect: effect, ArgumentsDigest: fakeDigest("args"), ToolDigest: fakeDigest("tool")})
}

func (b *jb) request(name, callID, tool, specDigest string) string {
	return b.add(name, 2, "approval_request", schema.ApprovalRequest{CallID: callID, Name: tool, ArgumentsDigest: fakeDigest("args"), ToolDigest: fakeDigest("tool"), SpecDigest: specDigest})
}

func (b *jb) decide(name, callID, request, decision string) string {
	return b.add(name, 2, "approval", schema.Approval{CallID: callID, Request: request, Decision: decision, By: "op"})
}

func (b *jb) usage(name string, in, out int64) string {
	return b.add(name, 1, "usage", map[string]any{"producer": producer, "input_tokens": in, "output_tokens": out})
}

func fakeDigest(s string) string { return string(digest.FromBytes([]byte(s))) }

// specV2 returns a valid version-2 spec with the given members replacing
// those of a spec that grants nothing.
func specV2(t *testing.T, members map[string]any) []byte {
	t.Helper()
	s := map[string]any{
		"version": 2, "workdir": "", "env": map[string]any{}, "secrets": []string{},
		"mcp_servers": []any{}, "tools": map[string]any{}, "tool_mappings": map[string]any{},
		"sandbox":   map[string]any{"mode": "required", "network": "none", "hosts": []string{}},
		"lifecycle": map[string]any{"ephemeral": false},
	}
	for k, v := range members {
		s[k] = v
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func server(name, effect, approval string, tools map[string]any) map[string]any {
	s := map[string]any{"name": name, "transport": "stdio", "command": name + "-mcp", "effect": effect, "approval": approval}
	if tools != nil {
		s["tools"] = tools
	}
	return s
}

// nextRelease is a release that reads every version the registry defines:
// the release of the runtime issues that start writing version 2.
func nextRelease() Release {
	r := Current()
	r.Name = "next"
	for _, k := range schema.AllKinds() {
		r.Reads[k] = Range{Floor: 1, Current: schema.Newest(k)}
	}
	return r
}

// manifestFor is a manifest head with every kind at version v.
func manifestFor(v int) []byte {
	schemas := map[string]int{}
	for _, k := range schema.Kinds {
		schemas[string(k)] = 1
	}
	schemas[string(schema.Journal)], schemas[string(schema.Environment)] = v, v
	b, _ := json.Marshal(map[string]any{"format": 1, "schemas": schemas, "writer": map[string]string{"release": "test"}})
	return b
}

func check(t *testing.T, spec []byte, j *jb, r Release) *Report {
	t.Helper()
	var v struct{ Version int }
	if err := json.Unmarshal(spec, &v); err != nil {
		t.Fatal(err)
	}
	in := Input{Manifest: manifestFor(v.Version), Spec: spec}
	if j != nil {
		in.Journal = bytes.NewReader(j.bytes())
	}
	rep, err := Check(in, r)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// issueSummary is an issue without its message, for comparisons.
type issueSummary struct {
	Code, Action, Tool string
	Events             []string
}

func summaries(is []Issue) []issueSummary {
	out := []issueSummary{}
	for _, i := range is {
		out = append(out, issueSummary{i.Code, i.Action, i.Tool, i.Events})
	}
	return out
}

func mustContain(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%q does not contain %q", s, p)
		}
	}
}
