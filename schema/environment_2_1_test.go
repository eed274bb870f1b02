package schema

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func genSpecV2(t *rapid.T) specV2 {
	word := rapid.StringMatching(`[a-z][a-z0-9]{0,6}`)
	s := specV2{Version: 2, Env: map[string]string{}, Secrets: []string{}, Tools: map[string]ruleV2{}, ToolMappings: map[string]string{},
		Sandbox: sandboxV2{Mode: rapid.SampledFrom([]string{"required", "none"}).Draw(t, "mode"),
			Network: rapid.SampledFrom([]string{"none", "hosts"}).Draw(t, "network"), Hosts: []string{}}}
	if s.Sandbox.Network == "hosts" {
		s.Sandbox.Hosts = []string{word.Draw(t, "host") + ":443"}
	}
	seen := map[string]bool{}
	for i, n := 0, rapid.IntRange(0, 3).Draw(t, "servers"); i < n; i++ {
		m := mcpServerV2{Name: word.Draw(t, "name"), Transport: "stdio", Command: word.Draw(t, "cmd"),
			Effect:   rapid.SampledFrom([]string{EffectRead, EffectWorkspace, EffectExternal}).Draw(t, "effect"),
			Approval: rapid.SampledFrom([]string{ApprovalRequired, ApprovalNever}).Draw(t, "approval")}
		if seen[m.Name] {
			continue
		}
		seen[m.Name] = true
		s.MCPServers = append(s.MCPServers, m)
	}
	if rapid.Bool().Draw(t, "builtin") {
		s.Tools["run"] = ruleV2{Approval: ApprovalNever}
	}
	s.Lifecycle.Ephemeral = rapid.Bool().Draw(t, "ephemeral")
	return s
}

// TestEnvironment2to1NeverWidens: the 0.1.0 view of any version-2 spec
// parses as version 1, reaches no network unless a migration from version 1
// kept that value, and migrated up again is at most as permissive as the
// version-2 spec it came from.
func TestEnvironment2to1NeverWidens(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, err := encodeIndented(genSpecV2(t))
		if err != nil {
			t.Fatal(err)
		}
		down, err := environment2to1(b)
		if err != nil {
			t.Fatal(err)
		}
		var v1 specV1
		if err := decodeStrict(down, &v1); err != nil || v1.Version != 1 {
			t.Fatalf("down view is not a version-1 spec: %v\n%s", err, down)
		}
		if v1.Sandbox.Network != "none" {
			t.Fatalf("network %s from a spec with no version-1 network", v1.Sandbox.Network)
		}
		again, err := environment1to2(down)
		if err != nil {
			t.Fatal(err)
		}
		var s specV2
		if err := decodeStrict(again, &s); err != nil {
			t.Fatal(err)
		}
		if s.Sandbox.Network != "none" || s.Lifecycle.Ephemeral || len(s.Tools) != 0 {
			t.Fatalf("upgrade after rollback widened:\n%s", again)
		}
		for _, m := range s.MCPServers {
			if m.Approval != ApprovalRequired || m.Effect != EffectExternal {
				t.Fatalf("server %s: %s %s", m.Name, m.Effect, m.Approval)
			}
		}
	})
}

func TestEnvironment2to1RefusesAnHTTPServer(t *testing.T) {
	s := specV2{Version: 2, Env: map[string]string{}, Secrets: []string{}, Tools: map[string]ruleV2{}, ToolMappings: map[string]string{},
		Sandbox:    sandboxV2{Mode: "required", Network: "none", Hosts: []string{}},
		MCPServers: []mcpServerV2{{Name: "search", Transport: "http", URL: "https://mcp.example/search", Effect: EffectRead, Approval: ApprovalNever}}}
	b, err := encodeIndented(s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = environment2to1(b)
	if !errors.Is(err, ErrNotExpressible) || !strings.Contains(err.Error(), `"search"`) {
		t.Fatalf("err = %v, want ErrNotExpressible naming the server", err)
	}
}

func TestEnvironment2to1RefusesBadInput(t *testing.T) {
	for _, in := range []string{`{"version": 1}`, `{"version": 2, "bogus": true}`, `[]`} {
		if _, err := environment2to1([]byte(in)); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want ErrInput", in, err)
		}
	}
}
