package agent

import (
	"github.com/agentcapsule/capsule/journal"
)

// The test toolboxes of the loop's own tests describe their tools as
// read-only tools that need no approval; a toolbox that did not would get
// the narrowest values (external, approval required).

func (x *box) Info(name string) (ToolInfo, bool) {
	return ToolInfo{Name: name, Effect: journal.EffectRead, Approval: ApprovalNever}, name == "look"
}

func (x *quickBox) Info(name string) (ToolInfo, bool) {
	return ToolInfo{Name: name, Effect: journal.EffectRead, Approval: ApprovalNever}, true
}
