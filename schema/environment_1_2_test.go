package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// genSpecV1 draws a version-1 spec as 0.1.0's envspec.Marshal writes it
// (secrets sorted, nil collections empty, two-space indentation); package
// envspec checks that such specs parse (envspec imports this package, so
// these tests cannot import it).
func genSpecV1(t *rapid.T) []byte {
	word := rapid.StringMatching(`[a-z][a-z0-9]{0,6}`)
	name := rapid.StringMatching(`[A-Z][A-Z0-9_]{0,6}`)
	s := specV1{Version: 1, Env: map[string]string{}, Secrets: []string{}, Tools: []toolV1{}, Sandbox: sandboxV1{Network: "none"}}
	s.Workdir = rapid.SampledFrom([]string{"", "src", "a/b"}).Draw(t, "workdir")
	for i, n := 0, rapid.IntRange(0, 3).Draw(t, "envs"); i < n; i++ {
		s.Env["V"+name.Draw(t, "env")] = word.Draw(t, "value")
	}
	secrets := map[string]bool{}
	for i, n := 0, rapid.IntRange(0, 3).Draw(t, "secrets"); i < n; i++ {
		secrets["S"+name.Draw(t, "secret")] = true
	}
	for n := range secrets {
		s.Secrets = append(s.Secrets, n)
	}
	sort.Strings(s.Secrets)
	seen := map[string]bool{}
	for i, n := 0, rapid.IntRange(0, 3).Draw(t, "tools"); i < n; i++ {
		tl := toolV1{Name: word.Draw(t, "tool"), Command: word.Draw(t, "command")}
		if seen[tl.Name] {
			continue
		}
		seen[tl.Name] = true
		if rapid.Bool().Draw(t, "args") {
			tl.Args = rapid.SliceOfN(word, 1, 3).Draw(t, "arglist")
		}
		if rapid.Bool().Draw(t, "toolenv") {
			tl.Env = map[string]string{"T" + name.Draw(t, "tenv"): word.Draw(t, "tval")}
		}
		if rapid.Bool().Draw(t, "toolsecrets") {
			tl.Secrets = []string{"S" + name.Draw(t, "tsecret")}
		}
		s.Tools = append(s.Tools, tl)
	}
	s.Sandbox.Network = rapid.SampledFrom([]string{"none", "loopback", "full"}).Draw(t, "network")
	if rapid.Bool().Draw(t, "packages") {
		s.Sandbox.Packages = rapid.SliceOfNDistinct(word, 1, 3, rapid.ID[string]).Draw(t, "pkgs")
	}
	s.Sandbox.CPUs = float64(rapid.IntRange(0, 8).Draw(t, "cpus")) / 2
	s.Sandbox.MemoryMB = int64(rapid.IntRange(0, 4096).Draw(t, "mem"))
	b, err := encodeIndented(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEnvironment1to2Example(t *testing.T) {
	b, err := os.ReadFile("../envspec/testdata/example.spec.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err := environment1to2(b)
	if err != nil {
		t.Fatal(err)
	}
	var s specV2
	if err := decodeStrict(out, &s); err != nil {
		t.Fatalf("output does not decode as version 2: %v\n%s", err, out)
	}
	if s.Version != 2 || len(s.MCPServers) != 2 || s.MCPServers[1].Name != "github" || s.MCPServers[1].Transport != "stdio" ||
		s.MCPServers[1].Command != "github-mcp-server" || len(s.MCPServers[1].Secrets) != 1 || s.MCPServers[0].Args[1] != "@modelcontextprotocol/server-filesystem" {
		t.Errorf("tools not carried over:\n%s", out)
	}
	if s.Sandbox.Network != "none" || s.Migrated == nil || s.Migrated.Network != "loopback" {
		t.Errorf("network: %+v, migrated %+v", s.Sandbox, s.Migrated)
	}
	if s.Sandbox.CPUs != 2 || s.Sandbox.MemoryMB != 4096 || len(s.Sandbox.Packages) != 2 || s.Env["LANG"] != "C.UTF-8" || s.Workdir != "src" {
		t.Errorf("sandbox or env changed:\n%s", out)
	}
}

func TestEnvironment1to2RefusesBadInput(t *testing.T) {
	for _, in := range []string{
		`{"version": 2, "workdir": "", "env": {}, "secrets": [], "tools": [], "sandbox": {"network": "none"}}`,
		`{"version": 1, "workdir": "", "env": {}, "secrets": [], "tools": [], "sandbox": {"network": "wide"}}`,
		`{"version": 1, "extra": 1, "workdir": "", "env": {}, "secrets": [], "tools": [], "sandbox": {"network": "none"}}`,
		`{"version": 1} {}`,
		`not json`,
	} {
		if _, err := environment1to2([]byte(in)); !errors.Is(err, ErrInput) {
			t.Errorf("%s: err = %v, want ErrInput", in, err)
		}
	}
}

// TestEnvironment1to2NeverGrantsAuthority is the seed's "defaulted field
// that grants authority" hazard: whatever a version-1 spec says, version 2
// reaches no network, runs no tool without approval, treats every tool as
// external, needs a sandbox and may not be discarded.
func TestEnvironment1to2NeverGrantsAuthority(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		out, err := environment1to2(genSpecV1(t))
		if err != nil {
			t.Fatal(err)
		}
		var s specV2
		if err := decodeStrict(out, &s); err != nil {
			t.Fatal(err)
		}
		if s.Sandbox.Network != "none" || len(s.Sandbox.Hosts) != 0 || s.Sandbox.Mode != "required" || s.Lifecycle.Ephemeral ||
			len(s.Tools) != 0 || len(s.ToolMappings) != 0 {
			t.Fatalf("authority widened:\n%s", out)
		}
		for _, m := range s.MCPServers {
			if m.Effect != EffectExternal || m.Approval != ApprovalRequired || len(m.Tools) != 0 || m.Transport != "stdio" {
				t.Fatalf("server %s: effect %s approval %s", m.Name, m.Effect, m.Approval)
			}
		}
	})
}

// TestEnvironmentUpThenDown: a version-1 spec migrated up and converted
// back down is the same bytes.
func TestEnvironmentUpThenDown(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genSpecV1(t)
		up, err := Up(Environment, 1, 2, b)
		if err != nil {
			t.Fatal(err)
		}
		down, err := Down(Environment, 2, 1, up)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(down, b) {
			t.Fatalf("round trip changed the spec:\n%s\nwant\n%s", down, b)
		}
		var v1 specV1
		if err := decodeStrict(down, &v1); err != nil || v1.Version != 1 {
			t.Fatalf("down view does not decode as version 1: %v", err)
		}
	})
}

func TestEnvironment1to2IsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genSpecV1(t)
		x, err1 := environment1to2(b)
		y, err2 := environment1to2(b)
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) || !json.Valid(x) {
			t.Fatalf("two runs differ: %v %v", err1, err2)
		}
	})
}
