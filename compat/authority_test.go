package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/agentcapsule/capsule/schema"
)

// genSpecV1 draws a version-1 spec (FORMAT §6.1) as 0.1.0 wrote it. It
// builds the JSON itself: envspec writes the current version only.
func genSpecV1(t *rapid.T) []byte {
	word := rapid.StringMatching(`[a-z][a-z0-9]{0,6}`)
	name := rapid.StringMatching(`[A-Z][A-Z0-9_]{0,6}`)
	secrets := rapid.SliceOfNDistinct(name, 0, 3, rapid.ID[string]).Draw(t, "secrets")
	sort.Strings(secrets)
	tools := []map[string]any{}
	for i, tn := range rapid.SliceOfNDistinct(word, 0, 4, rapid.ID[string]).Draw(t, "tools") {
		tl := map[string]any{"name": tn, "command": word.Draw(t, "command")}
		if rapid.Bool().Draw(t, fmt.Sprint("toolsecrets", i)) {
			tl["secrets"] = []string{"S" + name.Draw(t, "tsecret")}
		}
		tools = append(tools, tl)
	}
	network := rapid.SampledFrom([]string{"none", "loopback", "full"}).Draw(t, "network")
	b, err := json.MarshalIndent(map[string]any{"version": 1, "workdir": "", "env": map[string]string{}, "secrets": secrets,
		"tools": tools, "sandbox": map[string]any{"network": network}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// narrowKinds are the grants a version-1 spec cannot express; the up step
// must not give any of them (FORMAT §11.9.2).
var narrowKinds = map[string]bool{"network": true, "unsandboxed": true, "unapproved": true, "effect": true, "route": true, "discard": true}

// noBuiltins is a release without built-in tools, so that what the step
// gives is all there is to see.
func noBuiltins() Release {
	r := nextRelease()
	r.Tools = map[string]Builtin{}
	return r
}

// TestUpStepNeverWidens (property): for any version-1 spec, the version-2
// spec the up step writes grants nothing the original did not, under the
// releases there are; and every field version 2 adds is at its narrowest:
// no network, no call without approval, no effect below external, no
// mapping, no discard, a sandbox. Replay a failure with
// go test ./compat -run TestUpStepNeverWidens -rapid.seed=N.
func TestUpStepNeverWidens(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v1 := genSpecV1(t)
		v2, err := schema.Up(schema.Environment, 1, 2, v1)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []Release{Release010(), Current(), nextRelease()} {
			wide, err := MigrationWidens(v1, v2, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(wide) > 0 {
				t.Fatalf("release %s: migrating\n%s\ngrants %v", r.Name, v1, wide)
			}
		}
		after, err := AuthorityOf(v2, noBuiltins())
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range after {
			if narrowKinds[g.Kind] {
				t.Fatalf("migrated spec grants %v:\n%s", g, v2)
			}
		}
	})
}

// TestNoFixtureGainsAuthority: the spec of every capsule and node agent an
// earlier release wrote (testdata/fixtures/<release>/) migrates to a spec
// that grants nothing the original did not.
func TestNoFixtureGainsAuthority(t *testing.T) {
	specs, _ := filepath.Glob("../testdata/fixtures/*/capsules/*/environment/spec.json")
	nodes, _ := filepath.Glob("../testdata/fixtures/*/nodes/*/agents/*/capsule/environment/spec.json")
	if len(specs) == 0 || len(nodes) == 0 {
		t.Fatal("no fixture specs: run scripts/fixtures.sh")
	}
	for _, p := range append(specs, nodes...) {
		v1, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(v1, []byte(`"version": 2`)) {
			continue // written at version 2 (0.2.0's fixtures): no migration to widen it
		}
		v2, err := schema.Up(schema.Environment, 1, schema.Newest(schema.Environment), v1)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		before, err := AuthorityOf(v1, nextRelease())
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		after, err := AuthorityOf(v2, nextRelease())
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if wide := Widened(before, after); len(wide) > 0 {
			t.Errorf("%s: migration grants %v (before %v, after %v)", p, wide, before, after)
		}
	}
}

// A spec that would widen authority is caught: each of these version-2
// specs, as if a step had written it from the conversation fixture's
// version-1 spec, grants something that spec did not.
func TestWideningIsCaught(t *testing.T) {
	v1, err := os.ReadFile("../testdata/fixtures/0.1.0/capsules/conversation/environment/spec.json")
	if err != nil {
		t.Fatal(err)
	}
	gh := func(effect, approval string) map[string]any {
		s := server("github", effect, approval, nil)
		s["secrets"] = []string{"GITHUB_TOKEN"}
		return s
	}
	for _, tc := range []struct {
		name    string
		members map[string]any
		want    []Grant
	}{
		{"narrowest", map[string]any{"secrets": []string{"GITHUB_TOKEN"}, "mcp_servers": []any{gh("external", "required")}}, nil},
		{"approval never", map[string]any{"mcp_servers": []any{gh("external", "never")}}, []Grant{{"unapproved", "github.*"}}},
		{"read effect", map[string]any{"mcp_servers": []any{gh("read", "required")}}, []Grant{{"effect", "github.*=read"}}},
		{"a tool's own rule", map[string]any{"mcp_servers": []any{server("github", "external", "required", map[string]any{"merge": map[string]any{"approval": "never"}})}},
			[]Grant{{"unapproved", "github.merge"}}},
		{"a host outside loopback", map[string]any{"sandbox": map[string]any{"mode": "required", "network": "hosts", "hosts": []string{"api.github.com:443"}}},
			[]Grant{{"network", "api.github.com:443"}}},
		{"no sandbox", map[string]any{"sandbox": map[string]any{"mode": "none", "network": "none", "hosts": []string{}}}, []Grant{{"unsandboxed", ""}}},
		{"a new server", map[string]any{"mcp_servers": []any{server("shell", "external", "required", nil)}}, []Grant{{"server", "shell"}}},
		{"a mapping", map[string]any{"tool_mappings": map[string]any{"search": "github.search"}}, []Grant{{"route", "search>github.search"}}},
		{"ephemeral", map[string]any{"lifecycle": map[string]any{"ephemeral": true}}, []Grant{{"discard", ""}}},
		{"a built-in loosened", map[string]any{"tools": map[string]any{"counter.increment": map[string]any{"approval": "never"}}}, []Grant{{"unapproved", "counter.increment"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := nextRelease()
			r.Tools = map[string]Builtin{"counter.increment": {Effect: schema.EffectWorkspace, Approval: schema.ApprovalRequired}}
			got, err := MigrationWidens(v1, specV2(t, tc.members), r)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("widened (-want +got):\n%s", d)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		a, b Grant
		want bool
	}{
		{Grant{"network", "*"}, Grant{"network", "api.github.com:443"}, true},
		{Grant{"network", "loopback"}, Grant{"network", "127.0.0.1:8080"}, true},
		{Grant{"network", "loopback"}, Grant{"network", "[::1]:80"}, true},
		{Grant{"network", "loopback"}, Grant{"network", "api.github.com:443"}, false},
		{Grant{"network", "a:1"}, Grant{"network", "a:2"}, false},
		{Grant{"unapproved", "gh.*"}, Grant{"unapproved", "gh.merge"}, true},
		{Grant{"unapproved", "gh.*"}, Grant{"unapproved", "ghx.merge"}, false},
		{Grant{"unapproved", "gh.merge"}, Grant{"unapproved", "gh.*"}, false},
		{Grant{"effect", "gh.*=read"}, Grant{"effect", "gh.x=workspace"}, true},
		{Grant{"effect", "gh.*=workspace"}, Grant{"effect", "gh.x=read"}, false},
		{Grant{"server", "gh"}, Grant{"unapproved", "gh.*"}, false},
		{Grant{"secret", "/A"}, Grant{"secret", "gh/A"}, false},
	} {
		if got := covers(tc.a, tc.b); got != tc.want {
			t.Errorf("covers(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// Check refuses a restore whose spec migration would widen authority: with
// a step that lets every tool run without approval in place of the real
// one, a version-1 spec with a tool is refused, naming the grant.
func TestCheckRefusesWideningStep(t *testing.T) {
	in := readFixture(t, "../testdata/fixtures/0.1.0/capsules/empty")
	in.Spec = []byte(`{"version":1,"workdir":"","env":{},"secrets":[],"tools":[{"name":"gh","command":"gh"}],"sandbox":{"network":"none"}}`)
	defer func(f func(int, int, []byte) ([]byte, error)) { upSpec = f }(upSpec)
	upSpec = func(from, to int, b []byte) ([]byte, error) {
		return specV2(t, map[string]any{"mcp_servers": []any{server("gh", "external", "never", nil)}}), nil
	}
	rep, err := Check(in, nextRelease())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]issueSummary{{CodeAuthority, ActionRefuse, "", []string{}}}, summaries(rep.Issues)); d != "" || !rep.Refused {
		t.Fatalf("issues (-want +got):\n%s", d)
	}
	mustContain(t, rep.Issues[0].Message, "unapproved:gh.*")
}
