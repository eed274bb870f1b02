package tool_test

import (
	"testing"

	"github.com/agentcapsule/capsule/compat"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/tool"
)

// The current release's built-in table (compat, a pure package that cannot
// import this one) lists every workspace tool with this package's effect
// class and no approval; release 0.1.0 has none of them.
func TestCompatTable(t *testing.T) {
	cur, old := compat.Current().Tools, compat.Release010().Tools
	for _, name := range tool.Names() {
		b, ok := cur[name]
		if !ok || b.Effect != tool.Effect(name) || b.Approval != schema.ApprovalNever {
			t.Errorf("%s: current release has %+v (built in %v), want effect %q, approval never", name, b, ok, tool.Effect(name))
		}
		if _, ok := old[name]; ok {
			t.Errorf("%s: release 0.1.0 has it", name)
		}
	}
}
