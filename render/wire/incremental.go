package wire

import (
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
)

// Incremental renders a journal that grows between calls (the agent
// loop's): Render returns what the package's Render returns for the same
// arguments, byte for byte and report for report, reusing the work of the
// previous call when events extend its events for the same target (see
// render.Incremental). The zero value is ready; it is not safe for
// concurrent use.
type Incremental struct {
	plans render.Incremental
}

// Render renders events for t, as Render does.
func (c *Incremental) Render(events []journal.Event, t render.Target) ([]byte, *render.Report, error) {
	p, err := c.plans.Plan(events, t)
	if err != nil {
		return nil, nil, err
	}
	body, err := Body(p)
	if err != nil {
		return nil, nil, err
	}
	return body, &p.Report, nil
}
