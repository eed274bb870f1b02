package node

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/schema"
)

// TestShadowRecordNamesItsVersion checks that shadow.json names its schema
// version and writer release, that a record without a version (what older
// releases wrote) is still read as version 1, and that a record of a
// version this release does not read is never used as a shadow.
func TestShadowRecordNamesItsVersion(t *testing.T) {
	c := newCluster(t, nodeOpts{}, nodeOpts{})
	a, b := c.nodes[0], c.nodes[1]
	id := createAgent(t, a, workspaceOf(t, 20, 64))
	if res := move(t, a, b, id); res.Outcome != api.OutcomeCommitted {
		t.Fatalf("move: %+v", res)
	}
	waitSteps(t, b, id, 2)
	aa := a.targetTenant(id)
	aa.mu.Lock()
	defer aa.mu.Unlock()
	path := aa.path(shadowFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the source of the move kept no shadow: %v", err)
	}
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	if rec["v"] != float64(schema.Current[schema.Shadow]) || rec["release"] != schema.Release {
		t.Errorf("shadow.json has v %v, release %v; want %d and %q", rec["v"], rec["release"], schema.Current[schema.Shadow], schema.Release)
	}

	rewrite := func(v any) {
		t.Helper()
		m := map[string]any{}
		for k, x := range rec {
			m[k] = x
		}
		if v == nil {
			delete(m, "v")
			delete(m, "release")
		} else {
			m["v"] = v
		}
		b, _ := json.Marshal(m)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		aa.tgt.shadow = nil // forget the copy in memory: read the file
	}
	rewrite(nil)
	if st, _ := aa.loadShadow(); st == nil {
		t.Error("a shadow.json without v (version 1, an older release) was not used")
	}
	rewrite(schema.Current[schema.Shadow] + 1)
	if st, _ := aa.loadShadow(); st != nil {
		t.Errorf("a shadow.json of version %d, newer than this release reads, was used", schema.Current[schema.Shadow]+1)
	}
}
