package sim

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The simulator's models. Their names say what they are.
const (
	// Planner calls the tools it is offered, then answers citing their
	// results.
	Planner = "capsule-sim/planner"
	// Echo answers with the newest user request, calling no tool.
	Echo = "capsule-sim/echo"
)

// Models lists the models the simulator serves, in a fixed order.
var Models = []string{Planner, Echo}

// maxPlannedTools bounds how many offered tools the planner calls when
// the request names none of them.
const maxPlannedTools = 4

// plannedCall is one tool call a model makes.
type plannedCall struct {
	name string
	args json.RawMessage
}

// turn is one model answer, before it is spelled in a provider's style.
type turn struct {
	reasoning string
	calls     []plannedCall
	text      string
}

// answer runs model on the conversation.
func answer(model string, c conversation) turn {
	if model == Echo {
		return turn{text: "capsule-sim/echo: " + c.request}
	}
	return plan(c)
}

// plan is the planner: it calls, one step at a time, the offered tools
// the request names (in the order it names them) or, if it names none,
// the first maxPlannedTools offered tools; with "parallel" in the request
// it makes all remaining calls in one step. When every planned tool has a
// result it answers, citing each result.
func plan(c conversation) turn {
	if c.request == "" {
		return turn{reasoning: "No user request in the conversation.", text: "capsule-sim/planner: there is no user request to work on."}
	}
	todo := remaining(planned(c), c.called)
	if len(todo) == 0 {
		return turn{reasoning: fmt.Sprintf("All %d tool results are in; answering.", len(c.results)), text: cite(c)}
	}
	if !strings.Contains(strings.ToLower(c.request), "parallel") {
		todo = todo[:1]
	}
	var t turn
	var names, skipped []string
	for _, tl := range todo {
		args, err := argsFor(tl, c.request)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s (%v)", tl.name, err))
			continue
		}
		t.calls = append(t.calls, plannedCall{tl.name, args})
		names = append(names, tl.name)
	}
	t.reasoning = fmt.Sprintf("Request: %q. Next: call %s.", short(c.request, 80), strings.Join(names, ", "))
	if len(t.calls) == 0 {
		t.reasoning = "No planned tool takes arguments I can build."
		t.text = "capsule-sim/planner: cannot build valid arguments for " + strings.Join(skipped, "; ") + "."
	}
	return t
}

// planned returns the tools the planner means to call for the request.
func planned(c conversation) []tool {
	lower := strings.ToLower(c.request)
	type hit struct {
		at int
		t  tool
	}
	var hits []hit
	norm := idBytes(lower)
	for _, t := range c.tools {
		if i := strings.Index(lower, strings.ToLower(t.name)); t.name != "" && i >= 0 {
			hits = append(hits, hit{i, t})
		} else if stem, ok := hashedStem(t.name); ok {
			// A journal name the API refused is offered hashed
			// ("team.post" as "team_post_HsTGj2Yt"): the request names
			// the journal's, which reads as the stem once every byte an
			// API refuses is "_".
			if i := strings.Index(norm, strings.ToLower(stem)); i >= 0 {
				hits = append(hits, hit{i, t})
			}
		}
	}
	if len(hits) == 0 {
		return c.tools[:min(len(c.tools), maxPlannedTools)]
	}
	for i := 1; i < len(hits); i++ { // insertion sort: few tools, stable
		for j := i; j > 0 && hits[j].at < hits[j-1].at; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	out := make([]tool, len(hits))
	for i, h := range hits {
		out[i] = h.t
	}
	return out
}

// hashedStem returns the part of a tool name before the "_" and eight
// base62 digits render appends to a name it had to change, and whether
// name has that form.
func hashedStem(name string) (string, bool) {
	const n = 8
	if len(name) < n+2 || name[len(name)-n-1] != '_' {
		return "", false
	}
	for _, c := range []byte(name[len(name)-n:]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", false
		}
	}
	return name[:len(name)-n-1], true
}

// idBytes replaces every byte of s that is not a letter, a digit, "_" or
// "-" with "_", keeping every other byte where it is.
func idBytes(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// remaining drops from plan the tools already called since the request,
// one call for one planned use.
func remaining(plan []tool, called []string) []tool {
	left := map[string]int{}
	for _, n := range called {
		left[n]++
	}
	var out []tool
	for _, t := range plan {
		if left[t.name] > 0 {
			left[t.name]--
			continue
		}
		out = append(out, t)
	}
	return out
}

// cite is the planner's final answer: what each tool returned.
func cite(c conversation) string {
	if len(c.results) == 0 {
		return fmt.Sprintf("capsule-sim/planner: no tools were offered, so here is the request back: %q.", short(c.request, 200))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "capsule-sim/planner answer to %q, from %d tool results:", short(c.request, 80), len(c.results))
	for _, r := range c.results {
		verb := "returned"
		if r.isError {
			verb = "failed with"
		}
		name := r.name
		if name == "" {
			name = r.callID
		}
		fmt.Fprintf(&b, " %s %s %q;", name, verb, short(r.content, 120))
	}
	return strings.TrimSuffix(b.String(), ";") + "."
}

// short cuts s to at most n runes, marking the cut.
func short(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "…"
}
