package wire

import (
	"bytes"
	"slices"

	"github.com/agentcapsule/capsule/render"
)

// group is a run of plan items whose elements of the conversation list
// depend on nothing but the run itself (and the API and capabilities): no
// element holds parts of an item outside it. It keeps its own copy of the
// items, the elements they encoded to, and the placeholder signatures the
// encoding added (Gemini).
type group struct {
	items        []render.Item
	elems        [][]byte
	placeholders int
}

// groupKey is where a cache looks a run up: cheap to compute, and a hit is
// checked item by item.
type groupKey struct {
	kind       render.ItemKind
	n, size    int
	text, call string
}

// keyText is how much of a text a key holds.
const keyText = 32

// keyOf returns the key of a run.
func keyOf(run []render.Item) groupKey {
	it := &run[0]
	text := it.Text
	k := groupKey{kind: it.Kind, n: len(run)}
	if it.Step != nil && len(it.Step.Parts) > 0 {
		pt := &it.Step.Parts[0]
		text, k.call = pt.Text, pt.Call.ID
	}
	k.size, k.text = len(text), text[:min(len(text), keyText)]
	return k
}

// runs splits items into groups: for an API that merges same-role
// neighbours, a run ends only where the next item starts with another
// role than the one the run ends with; elsewhere every item is a run.
func runs(api render.API, items []render.Item) [][]render.Item {
	var out [][]render.Item
	start := 0
	for i := 1; i <= len(items); i++ {
		if i < len(items) && merges(api) && lastRole(&items[i-1]) == firstRole(&items[i]) {
			continue
		}
		out = append(out, items[start:i:i])
		start = i
	}
	return out
}

// The roles of Anthropic and Gemini messages: a step is the model's, with
// its results on the user side; instructions in the middle of the journal
// go to the user side too.
const (
	roleUser = iota
	roleModel
)

func firstRole(it *render.Item) int {
	if it.Kind == render.ItemStep {
		return roleModel
	}
	return roleUser
}

func lastRole(it *render.Item) int {
	if it.Kind == render.ItemStep && len(it.Step.Results) == 0 {
		return roleModel
	}
	return roleUser
}

// sentinel is an item put before a run that is encoded on its own, so that
// the run is not the plan's leading instructions and does not merge with
// it: a user turn before a step, else a step before a user-side item. It
// encodes to exactly one element in every API.
func sentinel(run []render.Item) render.Item {
	if run[0].Kind == render.ItemStep {
		return render.Item{Kind: render.ItemUser, Text: "."}
	}
	return render.Item{Kind: render.ItemStep, Step: &render.Step{Parts: []render.Part{{Kind: render.PartText, Text: "."}}}}
}

// encode encodes a run on its own: a plan of the sentinel and the run,
// whose list elements after the sentinel's are the run's.
func encode(p *render.Plan, run []render.Item) (*group, error) {
	sub := &render.Plan{Target: p.Target, Caps: p.Caps, Thinking: p.Thinking,
		Items: append([]render.Item{sentinel(run)}, run...)}
	f, err := frame(sub)
	if err != nil {
		return nil, err
	}
	if len(f.elems) < 2 {
		return nil, errShape
	}
	return &group{items: copyItems(run), elems: f.elems[1:], placeholders: sub.Report.Placeholders}, nil
}

// copyItems copies what a later plan could share with this one's items.
func copyItems(items []render.Item) []render.Item {
	out := slices.Clone(items)
	for i := range out {
		if st := out[i].Step; st != nil {
			c := *st
			c.Parts, c.Results = slices.Clone(st.Parts), slices.Clone(st.Results)
			out[i].Step = &c
		}
	}
	return out
}

// sameRun reports whether two runs encode alike: every exported field of
// their items is equal. Strings a plan shares with the previous one
// compare by pointer first, so an unchanged run costs little.
func sameRun(a, b []render.Item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameItem(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

func sameItem(a, b *render.Item) bool {
	if a.Kind != b.Kind || a.Role != b.Role || a.Text != b.Text || a.Synthetic != b.Synthetic || (a.Step == nil) != (b.Step == nil) {
		return false
	}
	if a.Step == nil {
		return true
	}
	x, y := a.Step, b.Step
	return x.Producer == y.Producer && x.Own == y.Own &&
		slices.EqualFunc(x.Parts, y.Parts, samePart) && slices.Equal(x.Results, y.Results)
}

func samePart(a, b render.Part) bool {
	return a.Kind == b.Kind && a.Text == b.Text && a.Signature == b.Signature && a.ItemID == b.ItemID &&
		a.Encrypted == b.Encrypted && a.Redacted == b.Redacted && slices.Equal(a.Summary, b.Summary) &&
		sameCall(&a.Call, &b.Call)
}

func sameCall(a, b *render.Call) bool {
	return a.ID == b.ID && a.JournalID == b.JournalID && a.Name == b.Name && a.JournalName == b.JournalName &&
		bytes.Equal(a.Arguments, b.Arguments) && a.ArgumentsText == b.ArgumentsText
}
