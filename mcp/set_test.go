package mcp_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/mcp"
)

// The counter lists one tool per page: both are offered, under
// "SERVER.TOOL", with the schemas the server gave.
func TestStartListsEveryPage(t *testing.T) {
	s, _ := start(t, mcp.Config{Servers: []envspec.Tool{stdio(t, "counter", "counter", nil)}})
	var names []string
	for _, d := range s.Tools() {
		names = append(names, d.Name)
		var schema map[string]any
		if err := json.Unmarshal(d.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: parameters %s are not an object schema (%v)", d.Name, d.Parameters, err)
		}
	}
	if diff := cmp.Diff([]string{"counter.bump", "counter.echo"}, names); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
}

// Effect classes and approval rules come from the spec: the server's
// default, then its per-tool map, member by member. The counter annotates
// both tools read-only and idempotent; that lowers nothing.
func TestRulesComeFromTheSpecOnly(t *testing.T) {
	type rule struct{ Effect, Approval string }
	cases := []struct {
		name   string
		server envspec.Tool
		want   map[string]rule
	}{
		{"server default", envspec.Tool{Effect: "external", Approval: "required"},
			map[string]rule{"bump": {"external", "required"}, "echo": {"external", "required"}}},
		{"per tool", envspec.Tool{Effect: "external", Approval: "required",
			Tools: map[string]envspec.Rule{"echo": {Effect: "read", Approval: "never"}}},
			map[string]rule{"bump": {"external", "required"}, "echo": {"read", "never"}}},
		{"per tool approval only", envspec.Tool{Effect: "workspace", Approval: "never",
			Tools: map[string]envspec.Rule{"bump": {Approval: "required"}}},
			map[string]rule{"bump": {"workspace", "required"}, "echo": {"workspace", "never"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sv := stdio(t, "c", "counter", nil)
			sv.Effect, sv.Approval, sv.Tools = c.server.Effect, c.server.Approval, c.server.Tools
			s, _ := start(t, mcp.Config{Servers: []envspec.Tool{sv}})
			got := map[string]rule{}
			for _, i := range s.Infos() {
				got[strings.TrimPrefix(i.Name, "c.")] = rule{i.Effect, i.Approval}
				if one, ok := s.Info(i.Name); !ok || one != i {
					t.Errorf("Info(%s) = %v, %v; want %v", i.Name, one, ok, i)
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCallMapsContentAndErrors(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "count")
	s, _ := start(t, mcp.Config{Servers: []envspec.Tool{stdio(t, "c", "counter", map[string]string{"COUNTER_FILE": counter})}})
	cases := []struct {
		tool, args string
		want       mcp.Result
	}{
		{"c.echo", `{"text":"hello"}`, mcp.Result{Content: "hello"}},
		{"c.echo", `{"text":"fail"}`, mcp.Result{Content: "echo refuses fail", IsError: true}},
		{"c.echo", `{"text":"image"}`, mcp.Result{Content: "image\n[image image/png, 4 bytes]"}},
		{"c.bump", `{"note":"one"}`, mcp.Result{Content: "count 1"}},
		{"c.bump", ``, mcp.Result{Content: "count 2"}},
	}
	for _, c := range cases {
		got := s.Call(t.Context(), c.tool, json.RawMessage(c.args))
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", c.tool, c.args, diff)
		}
	}
	for _, c := range []struct{ tool, args, want string }{
		{"c.nope", `{}`, `no MCP tool "c.nope"; the tools are: c.bump, c.echo`},
		{"c.echo", `{"text":7}`, "refused the call of c.echo"},
	} {
		got := s.Call(t.Context(), c.tool, json.RawMessage(c.args))
		if !got.IsError || !strings.Contains(got.Content, c.want) {
			t.Errorf("%s %s = %+v; want an error containing %q", c.tool, c.args, got, c.want)
		}
	}
	if n := lines(t, counter); n != 2 {
		t.Fatalf("counter has %d lines; want 2", n)
	}
}

// A result longer than MaxOutput is cut with a note and kept whole in Full.
func TestCallCapsOutput(t *testing.T) {
	s, _ := start(t, mcp.Config{Servers: []envspec.Tool{stdio(t, "c", "counter", nil)}, MaxOutput: 100})
	long := strings.Repeat("x", 300)
	got := s.Call(t.Context(), "c.echo", json.RawMessage(`{"text":"`+long+`"}`))
	if string(got.Full) != long || !strings.HasPrefix(got.Content, strings.Repeat("x", 100)+"\n[output truncated: showing 100 of 300 bytes") {
		t.Fatalf("got %q (full %d bytes)", got.Content, len(got.Full))
	}
}

// A server's secrets reach its environment, resolved at start; an
// unresolved one refuses the start by name.
func TestSecretsAtStart(t *testing.T) {
	sv := stdio(t, "c", "counter", map[string]string{"ECHO_ENV": "API_TOKEN"})
	sv.Secrets = []string{"API_TOKEN"}
	vault := map[string]string{"API_TOKEN": "tok-3141592653"}
	secret := func(n string) (string, bool) { v, ok := vault[n]; return v, ok }
	s, _ := start(t, mcp.Config{Servers: []envspec.Tool{sv}, Secret: secret})
	if got := s.Call(t.Context(), "c.echo", json.RawMessage(`{"text":"env"}`)); got.Content != "tok-3141592653" {
		t.Fatalf("the server saw API_TOKEN=%q", got.Content)
	}
	// A server that prints the secret and dies: the error shows its
	// stderr without the value.
	leak := envspec.Tool{Name: "leak", Transport: "stdio", Command: "/bin/sh", Args: []string{"-c", `echo "token=$API_TOKEN" >&2; exit 1`},
		Secrets: []string{"API_TOKEN"}, Effect: envspec.EffectExternal, Approval: envspec.ApprovalRequired}
	_, err := mcp.Start(t.Context(), mcp.Config{Servers: []envspec.Tool{leak}, Secret: secret})
	if err == nil || strings.Contains(err.Error(), "tok-3141592653") || !strings.Contains(err.Error(), "token=[secret API_TOKEN]") {
		t.Fatalf("start of a server that prints its secret: %v", err)
	}
	delete(vault, "API_TOKEN")
	_, err = mcp.Start(t.Context(), mcp.Config{Servers: []envspec.Tool{sv}, Secret: secret})
	if err == nil || !strings.Contains(err.Error(), "secret API_TOKEN is not available") {
		t.Fatalf("start without the secret: %v", err)
	}
}
