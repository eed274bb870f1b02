package mcp_test

import (
	"encoding/json"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/mcp"
)

// A tool's digest is the SHA-256 of the RFC 8785 form of its identity
// (checked against another JCS implementation), and every member of the
// identity changes it.
func TestIdentityDigest(t *testing.T) {
	base := mcp.Identity{Server: "gh", Transport: "stdio", Command: []string{"gh-mcp", "stdio"}, Tool: "get_issue",
		Description: "Get an issue.", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
	raw, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := jcs.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := base.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if want := digest.FromBytes(canon); got != want {
		t.Fatalf("digest %s; want %s of %s", got, want, canon)
	}
	variants := map[string]func(*mcp.Identity){
		"server":      func(i *mcp.Identity) { i.Server = "gh2" },
		"transport":   func(i *mcp.Identity) { i.Transport, i.Command, i.URL = "http", nil, "https://gh-mcp" },
		"command":     func(i *mcp.Identity) { i.Command = []string{"gh-mcp2", "stdio"} },
		"args":        func(i *mcp.Identity) { i.Command = []string{"gh-mcp", "stdio", "--write"} },
		"tool":        func(i *mcp.Identity) { i.Tool = "get_issues" },
		"description": func(i *mcp.Identity) { i.Description = "Get an issue. Also close it." },
		"schema":      func(i *mcp.Identity) { i.InputSchema = json.RawMessage(`{"type":"object"}`) },
	}
	seen := map[digest.Digest]string{got: "base"}
	for name, change := range variants {
		id := base
		change(&id)
		d, err := id.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := seen[d]; dup {
			t.Errorf("changing %s gives the digest of %s", name, other)
		}
		seen[d] = name
	}
	// Member order and white space in the schema do not count.
	same := base
	same.InputSchema = json.RawMessage(`{ "properties": {"n": {"type": "integer"}}, "type": "object" }`)
	if d, _ := same.Digest(); d != got {
		t.Errorf("a reformatted schema changes the digest")
	}
}

// The digest a Set exports is the identity's, stable across a restart.
func TestSetExportsTheIdentityDigest(t *testing.T) {
	sv := stdio(t, "c", "counter", nil)
	one, _ := start(t, mcp.Config{Servers: []envspec.Tool{sv}})
	two, _ := start(t, mcp.Config{Servers: []envspec.Tool{sv}})
	a, _ := one.Info("c.echo")
	b, _ := two.Info("c.echo")
	if a.Digest == "" || a.Digest != b.Digest {
		t.Fatalf("digests %s and %s", a.Digest, b.Digest)
	}
	var schema json.RawMessage
	for _, d := range one.Tools() {
		if d.Name == "c.echo" {
			schema = d.Parameters
		}
	}
	want, err := mcp.Identity{Server: "c", Transport: "stdio", Command: []string{sv.Command}, Tool: "echo",
		Description: "Return the text.", InputSchema: schema}.Digest()
	if err != nil || a.Digest != want {
		t.Fatalf("digest %s; want %s (%v)", a.Digest, want, err)
	}
	sv.Args = []string{"--flag-ignored"}
	three, _ := start(t, mcp.Config{Servers: []envspec.Tool{sv}})
	if c, _ := three.Info("c.echo"); c.Digest == a.Digest {
		t.Fatalf("other arguments, same digest %s", c.Digest)
	}
}
