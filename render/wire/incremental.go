package wire

import (
	"errors"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
)

// Incremental renders a journal that grows between calls (the agent
// loop's): Render returns what the package's Render returns for the same
// arguments, byte for byte and report for report, reusing the work of the
// previous call when events extend its events for the same target (see
// render.Incremental).
//
// The body is spliced, not marshalled whole: the plan's items are cut
// into runs whose elements of the conversation list depend on the run
// alone (groupCache), each run the previous call encoded is reused as the
// bytes it encoded to, and only new or changed runs are encoded, each on
// its own, by the same encoder as Body (so with the same bytes). The
// members around the list (system, tools, settings) are marshalled from
// a plan of the leading instructions alone, when they change. The zero
// value is ready; it is not safe for concurrent use.
type Incremental struct {
	plans  render.Incremental
	groups groupCache
}

// errShape is returned when a body does not have the shape splicing
// relies on; Render then marshals the whole body.
var errShape = errors.New("wire: body has no conversation list to splice")

// Render renders events for t, as Render does.
func (c *Incremental) Render(events []journal.Event, t render.Target) ([]byte, *render.Report, error) {
	p, err := c.plans.Plan(events, t)
	if err != nil {
		return nil, nil, err
	}
	body, err := c.groups.body(p)
	if errors.Is(err, errShape) {
		c.groups = groupCache{}
		body, err = Body(p)
	}
	if err != nil {
		return nil, nil, err
	}
	return body, &p.Report, nil
}

// groupCache remembers the runs the previous plans encoded. What a run
// encodes to is a function of its items, the API and the capabilities
// (not of thinking, which only the frame holds); it is kept for one model
// and capabilities (a model switch starts afresh, as render.Incremental
// does) and checked item by item. Like render's memos it keeps two
// generations, about one window of runs.
type groupCache struct {
	api       render.API
	model     string
	caps      render.Caps
	cur, prev map[groupKey][]*group
	frame     frameMemo
}

// body returns the request body of p, as Body does, adding to p.Report
// the placeholder signatures Body would add.
func (g *groupCache) body(p *render.Plan) ([]byte, error) {
	if _, ok := listKey[p.Target.API]; !ok {
		return Body(p)
	}
	g.turn(p)
	f, err := g.frame.frameOf(p)
	if err != nil {
		return nil, err
	}
	lead := p.Leading()
	var groups []*group
	placeholders := 0
	for _, run := range runs(p.Target.API, p.Items[lead:]) {
		gr, err := g.lookup(p, run)
		if err != nil {
			return nil, err
		}
		groups = append(groups, gr)
		placeholders += gr.placeholders
	}
	p.Report.Placeholders += placeholders
	return splice(f.prefix, f.elems, groups, f.suffix), nil
}

// turn starts a call for p: runs the previous call did not use again are
// forgotten, and all of them when the API, model or capabilities changed.
func (g *groupCache) turn(p *render.Plan) {
	t := &p.Target
	if t.API != g.api || t.Model != g.model || p.Caps != g.caps {
		*g = groupCache{api: t.API, model: t.Model, caps: p.Caps}
	}
	g.prev, g.cur = g.cur, make(map[groupKey][]*group, len(g.cur))
}

// lookup returns the encoded run, from the cache or encoded now.
func (g *groupCache) lookup(p *render.Plan, run []render.Item) (*group, error) {
	k := keyOf(run)
	if gr := find(g.cur[k], run); gr != nil {
		return gr, nil // a run this call used already
	}
	gr := find(g.prev[k], run)
	if gr == nil {
		var err error
		if gr, err = encode(p, run); err != nil {
			return nil, err
		}
	}
	g.cur[k] = append(g.cur[k], gr)
	return gr, nil
}

// find returns the group of grs whose items are run's, or nil.
func find(grs []*group, run []render.Item) *group {
	for _, gr := range grs {
		if sameRun(gr.items, run) {
			return gr
		}
	}
	return nil
}
