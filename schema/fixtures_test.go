package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestStepsOnReleaseFixtures runs the steps over what every earlier release
// wrote (testdata/fixtures/<release>/capsules, made by scripts/fixtures.sh):
// each spec, index and journal line migrates up and converts back down to
// the same bytes.
func TestStepsOnReleaseFixtures(t *testing.T) {
	caps, err := filepath.Glob("../testdata/fixtures/*/capsules/*")
	if err != nil || len(caps) == 0 {
		t.Fatalf("no fixtures (%v): run scripts/fixtures.sh", err)
	}
	for _, c := range caps {
		for _, f := range []struct {
			kind Kind
			path string
		}{{Environment, "environment/spec.json"}, {MemoryIndex, "memory/vector_index/index.json"}} {
			b, err := os.ReadFile(filepath.Join(c, f.path))
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, c+"/"+f.path, f.kind, b)
		}
		j, err := os.ReadFile(filepath.Join(c, "memory/timeline_events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(j, []byte("\n")), []byte("\n")) {
			if len(line) > 0 {
				roundTrip(t, fmt.Sprintf("%s journal line %d", c, i+1), Journal, line)
			}
		}
	}
}

// isV2Kind reports whether the journal line is of a kind journal version
// 2 adds.
func isV2Kind(line []byte) bool {
	var head struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(line, &head)
	switch head.Kind {
	case "tool_dispatch", "approval_request", "approval", "effect_outcome", "tool_mapping":
		return true
	}
	return false
}

// fileVersion is the version member of a spec or an index, or a journal
// line's v.
func fileVersion(t *testing.T, k Kind, b []byte) int {
	t.Helper()
	var head struct {
		Version int `json:"version"`
		V       int `json:"v"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		t.Fatal(err)
	}
	if k == Journal {
		return head.V
	}
	return head.Version
}

// roundTrip checks a record a release wrote: version 1 migrates up and back
// to the same bytes; a newer one converts down to version 1 (the view a
// rollback or a 0.1.0 node reads), which migrates up again.
func roundTrip(t *testing.T, name string, k Kind, b []byte) {
	t.Helper()
	if v := fileVersion(t, k, b); v > 1 && k == Journal {
		// A journal line is never rewritten (its id is its hash): down
		// gives the same bytes, or refuses a line of a version-2 kind.
		down, err := Down(k, v, 1, b)
		if err == nil && !bytes.Equal(down, b) {
			t.Errorf("%s: version %d down changed the line:\n%s", name, v, down)
		}
		if err != nil && !isV2Kind(b) {
			t.Errorf("%s: version %d down: %v", name, v, err)
		}
		return
	} else if v > 1 {
		down, err := Down(k, v, 1, b)
		if err == nil {
			_, err = Up(k, 1, v, down)
		}
		if err != nil {
			t.Errorf("%s: version %d down and up: %v", name, v, err)
		}
		return
	}
	up, err := Up(k, 1, Newest(k), b)
	if err != nil {
		t.Errorf("%s: up: %v", name, err)
		return
	}
	down, err := Down(k, Newest(k), 1, up)
	if err != nil || !bytes.Equal(down, b) {
		t.Errorf("%s: down gives %s, %v; want\n%s", name, down, err, b)
	}
}

// TestNoFixtureGainsAuthority: the spec of every capsule an earlier release
// wrote, migrated to the newest version, reaches no network, runs no tool
// without approval, treats every tool as external, needs a sandbox and is
// not ephemeral (the seed's "defaulted field that grants authority").
func TestNoFixtureGainsAuthority(t *testing.T) {
	specs, err := filepath.Glob("../testdata/fixtures/*/capsules/*/environment/spec.json")
	if err != nil || len(specs) == 0 {
		t.Fatalf("no fixture specs (%v)", err)
	}
	node, _ := filepath.Glob("../testdata/fixtures/*/nodes/*/agents/*/capsule/environment/spec.json")
	for _, p := range append(specs, node...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if fileVersion(t, Environment, b) != 1 {
			continue // written at a version that states its authority
		}
		up, err := Up(Environment, 1, Newest(Environment), b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var s specV2
		if err := decodeStrict(up, &s); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if s.Sandbox.Network != "none" || len(s.Sandbox.Hosts) != 0 || s.Sandbox.Mode != "required" || s.Lifecycle.Ephemeral || len(s.Tools) != 0 || len(s.ToolMappings) != 0 {
			t.Errorf("%s: migrated spec grants more:\n%s", p, up)
		}
		for _, m := range s.MCPServers {
			if m.Effect != EffectExternal || m.Approval != ApprovalRequired || len(m.Tools) != 0 {
				t.Errorf("%s: server %s is %s/%s", p, m.Name, m.Effect, m.Approval)
			}
		}
	}
}
