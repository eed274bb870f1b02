package node

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/manifest"
)

// An agent created with a spec holds it as its environment; a spec that
// does not parse is refused before anything of the agent is written.
func TestCreateAgentWithSpec(t *testing.T) {
	n := newNode(t, filepath.Join(t.TempDir(), "n"), nodeOpts{})
	def := envspec.Default()
	def.Builtins = map[string]envspec.Rule{"run": {Approval: "required"}}
	def.Tools = []envspec.Tool{{Name: "team", Transport: "http", URL: "http://127.0.0.1:9/mcp", Effect: "external", Approval: "required"}}
	spec, err := def.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "s", Stopped: true, Spec: json.RawMessage(spec)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := n.getTenant(st.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(a.capsule(), filepath.FromSlash(manifest.EnvironmentPath)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := envspec.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "team" || got.Builtins["run"].Approval != "required" {
		t.Fatalf("stored spec: %s", b)
	}

	before, _ := n.Agents(t.Context())
	_, err = n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "bad", Spec: json.RawMessage(`{"version":2,"sandbox":{"mode":"maybe"}}`)})
	if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), "spec") {
		t.Fatalf("a bad spec: %v, want ErrInvalid naming the spec", err)
	}
	after, _ := n.Agents(t.Context())
	if len(after) != len(before) {
		t.Fatalf("a refused create left an agent: %d agents, were %d", len(after), len(before))
	}
	if ents, _ := os.ReadDir(filepath.Join(n.cfg.Dir, "agents")); len(ents) != 1 {
		t.Fatalf("agents folder holds %d entries after the refused create, want 1", len(ents))
	}
}
