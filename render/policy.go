package render

import (
	"fmt"
	"strings"
	"unicode"
)

// applyPolicies enforces the rules that depend on neighbouring items:
// where reasoning may stand, whether thinking can be on, and which
// provider item IDs may be replayed.
func (b *builder) applyPolicies(p *Plan) {
	switch b.t.API {
	case Anthropic:
		b.anthropicPolicy(p)
		p.Items = pruneEmpty(p.Items)
		b.trimFinal(p.Items)
	case OpenAIResponses:
		b.responsesPolicy(p)
	case Ollama, Gemini:
		p.Thinking = b.caps.Thinking == ThinkingAlways || b.caps.Thinking == ThinkingOptional && !b.t.NoThinking
	}
	p.Items = pruneEmpty(p.Items)
}

// trimFinal trims the trailing whitespace of a final assistant message
// (Anthropic: "final assistant content cannot end with trailing
// whitespace"). Whitespace-only texts were left out when built, so the
// trimmed text is never empty; its token count stays an upper bound.
func (b *builder) trimFinal(items []Item) {
	if len(items) == 0 {
		return
	}
	st := items[len(items)-1].Step
	if st == nil || len(st.Results) > 0 || len(st.Parts) == 0 {
		return
	}
	pt := &st.Parts[len(st.Parts)-1]
	if t := strings.TrimRightFunc(pt.Text, unicode.IsSpace); pt.Kind == PartText && t != pt.Text {
		pt.Text = t
		b.noteBlank(pt.event, TrailingWhitespace, "")
	}
}

// pruneEmpty removes steps left with no parts: an API rejects an
// assistant message without content.
func pruneEmpty(items []Item) []Item {
	out := items[:0]
	for _, it := range items {
		if it.Kind == ItemStep && len(it.Step.Parts) == 0 {
			continue
		}
		out = append(out, it)
	}
	return out
}

// MinThinkingBudget is Anthropic's smallest thinking budget; a model whose
// maximum output does not exceed it cannot think.
const MinThinkingBudget = 1024

// anthropicPolicy applies Anthropic's thinking rules (reference §1.3):
// an assistant message that holds thinking must start with it; with
// thinking on, the first assistant message of the open turn (the steps
// after the last user text, whose tool results do not end the turn) and
// the one before the last tool results (or a final assistant message)
// must start with thinking; with thinking off, no thinking is sent in a
// final assistant message. A request that cannot meet the second rule
// turns thinking off when the model allows it, keeping the model's
// earlier thinking where the API takes it, else renders the failing run
// of steps as text.
func (b *builder) anthropicPolicy(p *Plan) {
	switch b.caps.Thinking {
	case ThinkingAlways:
		p.Thinking = true
	case ThinkingOptional:
		p.Thinking = !b.t.NoThinking && b.caps.MaxOutput > MinThinkingBudget
	}
	if !p.Thinking {
		dropReasoning(p.Items, &b.report)
		return
	}
	// Dropping reasoning can empty a step, and removing it can join two
	// runs, so repeat until every run with reasoning starts with it.
	for changed := true; changed; {
		changed = false
		p.Items = pruneEmpty(p.Items)
		for _, r := range runs(p.Items) {
			if hasReasoning(p.Items, r) && !startsWithReasoning(p.Items, r) {
				dropReasoning(p.Items[r[0]:r[1]], &b.report)
				changed = true
			}
		}
	}
	// Text joins the last user turn, which may then hold the results of
	// the run before; repeat until the open turn leads with thinking or a
	// real user turn ends the tool loop.
	for {
		r, ok := unthoughtRun(p.Items)
		if !ok {
			return
		}
		if b.caps.Thinking == ThinkingOptional {
			p.Thinking = false
			b.report.ThinkingDisabled = true
			dropFinalReasoning(p.Items, &b.report)
			return
		}
		b.textualize(p.Items[r[0]:r[1]])
	}
}

// runs returns the [start, end) bounds of each run of consecutive step
// items: the steps an API that alternates roles merges into one assistant
// message. A step with results ends its run (the results are a user turn).
func runs(items []Item) [][2]int {
	var out [][2]int
	for i := 0; i < len(items); {
		if items[i].Kind != ItemStep {
			i++
			continue
		}
		r := runAt(items, i)
		out = append(out, r)
		i = r[1]
	}
	return out
}

// finalRun returns the run whose first block Anthropic checks when
// thinking is on: the run of the last step if that step has results (the
// last user turn then holds tool results) or ends the request.
func finalRun(items []Item) ([2]int, bool) {
	rs := runs(items)
	if len(rs) == 0 {
		return [2]int{}, false
	}
	r := rs[len(rs)-1]
	last := items[r[1]-1].Step
	if len(last.Results) > 0 || r[1] == len(items) {
		return r, true
	}
	return [2]int{}, false
}

// unthoughtRun returns a run that must start with thinking and does not:
// the first run of the open turn (the runs back to the last item that is
// not a step), else the final run.
func unthoughtRun(items []Item) ([2]int, bool) {
	final, ok := finalRun(items)
	if !ok {
		return [2]int{}, false
	}
	start := final[0]
	for start > 0 && items[start-1].Kind == ItemStep {
		start--
	}
	first := runAt(items, start)
	if !startsWithReasoning(items, first) {
		return first, true
	}
	if !startsWithReasoning(items, final) {
		return final, true
	}
	return [2]int{}, false
}

// runAt returns the run that starts at item i, a step.
func runAt(items []Item, i int) [2]int {
	j := i
	for j < len(items) && items[j].Kind == ItemStep {
		j++
		if len(items[j-1].Step.Results) > 0 {
			break
		}
	}
	return [2]int{i, j}
}

// dropFinalReasoning removes the reasoning of a final assistant message
// (the request ends on steps without results): with thinking off, that is
// the only message the API refuses thinking in ("When thinking is
// disabled, an assistant message in the final position cannot contain
// thinking"), so earlier thinking of the model stays as it was sent.
func dropFinalReasoning(items []Item, rep *Report) {
	r, ok := finalRun(items)
	if ok && r[1] == len(items) && len(items[r[1]-1].Step.Results) == 0 {
		dropReasoning(items[r[0]:r[1]], rep)
	}
}

func hasReasoning(items []Item, r [2]int) bool {
	for _, it := range items[r[0]:r[1]] {
		for _, pt := range it.Step.Parts {
			if pt.Kind == PartReasoning {
				return true
			}
		}
	}
	return false
}

func startsWithReasoning(items []Item, r [2]int) bool {
	parts := items[r[0]].Step.Parts
	return len(parts) > 0 && parts[0].Kind == PartReasoning
}

// dropReasoning removes every reasoning part from the steps among items.
func dropReasoning(items []Item, rep *Report) {
	for i := range items {
		st := items[i].Step
		if st == nil {
			continue
		}
		kept := st.Parts[:0]
		for _, pt := range st.Parts {
			if pt.Kind == PartReasoning {
				rep.ReasoningKept--
				rep.ReasoningDropped++
				continue
			}
			kept = append(kept, pt)
		}
		st.Parts = kept
	}
}

// textualize replaces each step among items by a user-side text that
// tells what the step said and did.
func (b *builder) textualize(items []Item) {
	for i := range items {
		st := items[i].Step
		for _, pt := range st.Parts {
			if pt.Kind == PartReasoning {
				b.report.ReasoningKept--
				b.report.ReasoningDropped++
			}
			if pt.Kind == PartCall {
				b.report.Textualized = append(b.report.Textualized, pt.Call.JournalID)
			}
		}
		text := textual(st)
		items[i] = Item{Kind: ItemUser, Text: text, Synthetic: "textual", tokens: b.cnt.count(text) + perMessage}
	}
}

// textual is the text form of a step: what it said, each call with its
// arguments and its result. Reasoning is never included.
func textual(st *Step) string {
	var b strings.Builder
	p := st.Producer
	fmt.Fprintf(&b, "[Earlier assistant step by %s/%s/%s, shown as text:]", p.Provider, p.API, p.Model)
	results := map[int]Result{}
	k := 0
	for i, pt := range st.Parts {
		if pt.Kind == PartCall {
			results[i] = st.Results[k]
			k++
		}
	}
	for i, pt := range st.Parts {
		switch pt.Kind {
		case PartText:
			fmt.Fprintf(&b, "\nSaid: %s", pt.Text)
		case PartCall:
			r := results[i]
			status := "returned"
			if r.IsError {
				status = "failed with"
			}
			fmt.Fprintf(&b, "\nCalled %s(%s) and it %s: %s", pt.Call.Name, pt.Call.ArgumentsText, status, r.Content)
		}
	}
	return b.String()
}

// responsesPolicy keeps a Responses reasoning item only when an output
// item of its step follows it, and keeps provider item IDs only in steps
// that replay reasoning (reference §1.2: reasoning needs its following
// item; an item with an ID needs its reasoning).
func (b *builder) responsesPolicy(p *Plan) {
	p.Thinking = b.caps.Thinking != ThinkingNone
	for i := range p.Items {
		st := p.Items[i].Step
		if st == nil {
			continue
		}
		followed := false
		keep := make([]Part, 0, len(st.Parts))
		for j := len(st.Parts) - 1; j >= 0; j-- {
			pt := st.Parts[j]
			if pt.Kind != PartReasoning {
				followed = true
			} else if !followed {
				b.report.ReasoningKept--
				b.report.ReasoningDropped++
				continue
			}
			keep = append(keep, pt)
		}
		reverse(keep)
		st.Parts = keep
		if hasReasoning(p.Items, [2]int{i, i + 1}) {
			p.Thinking = true // the replayed reasoning needs its encrypted content back
		} else {
			for j := range st.Parts {
				st.Parts[j].ItemID = ""
			}
		}
	}
}

func reverse(ps []Part) {
	for i, j := 0, len(ps)-1; i < j; i, j = i+1, j-1 {
		ps[i], ps[j] = ps[j], ps[i]
	}
}
