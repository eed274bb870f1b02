package wire

import (
	"bytes"
	"slices"

	"github.com/agentcapsule/capsule/render"
)

// frameMemo remembers the members around the conversation list of the
// previous call, with what Body reads to make them: the model, the
// capabilities, thinking, the declared tools and the leading
// instructions. They rarely change within a run.
type frameMemo struct {
	model    string
	caps     render.Caps
	thinking bool
	tools    []render.Tool
	lead     []render.Item
	f        framed
	ok       bool
}

// frameOf returns p cut around its conversation list with the list's
// elements dropped but those of the leading instructions (APIs without a
// system slot list them): frame of a plan of the leading instructions and
// one user turn, whose element is dropped.
func (m *frameMemo) frameOf(p *render.Plan) (framed, error) {
	lead := p.Leading()
	if m.ok && m.same(p, lead) {
		return m.f, nil
	}
	fp := &render.Plan{Target: p.Target, Caps: p.Caps, Tools: p.Tools, Thinking: p.Thinking,
		Items: append(p.Items[:lead:lead], render.Item{Kind: render.ItemUser, Text: "."})}
	f, err := frame(fp)
	if err != nil {
		return framed{}, err
	}
	if len(f.elems) < 1 {
		return framed{}, errShape
	}
	f.elems = f.elems[:len(f.elems)-1]
	*m = frameMemo{model: p.Target.Model, caps: p.Caps, thinking: p.Thinking, tools: cloneTools(p.Tools),
		lead: copyItems(p.Items[:lead]), f: f, ok: true}
	return f, nil
}

// same reports whether p's frame is the remembered one.
func (m *frameMemo) same(p *render.Plan, lead int) bool {
	return p.Target.Model == m.model && p.Caps == m.caps && p.Thinking == m.thinking &&
		slices.EqualFunc(p.Tools, m.tools, sameTool) && sameRun(p.Items[:lead], m.lead)
}

func sameTool(a, b render.Tool) bool {
	return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.Parameters, b.Parameters)
}

// cloneTools copies what a caller could change in place: the schemas.
func cloneTools(tools []render.Tool) []render.Tool {
	out := slices.Clone(tools)
	for i := range out {
		out[i].Parameters = bytes.Clone(out[i].Parameters)
	}
	return out
}
