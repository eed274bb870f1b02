package render

import (
	"crypto/sha256"
	"math/big"
	"strconv"
)

// ValidID reports whether id is a tool-call ID the rule accepts.
func ValidID(rule IDRule, id string) bool {
	switch rule {
	case IDMistral:
		return len(id) == 9 && allBytes(id, isAlnum)
	case IDAnthropic:
		return len(id) >= 1 && len(id) <= 64 && allBytes(id, isIDByte)
	case IDOpenAI:
		return len(id) >= 1 && len(id) <= 40 && allBytes(id, isIDByte)
	}
	return id != ""
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func isIDByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// hashedID derives an ID in the rule's syntax from id and an attempt
// number: a prefix and base62 digits of sha256(id, attempt).
func hashedID(rule IDRule, id string, attempt int) string {
	sum := sha256.Sum256([]byte(id + "\x00" + strconv.Itoa(attempt)))
	digits := new(big.Int).SetBytes(sum[:]).Text(62)
	for len(digits) < 24 {
		digits = "0" + digits
	}
	switch rule {
	case IDMistral:
		return digits[:9]
	case IDAnthropic:
		return "toolu_" + digits[:24]
	}
	return "call_" + digits[:24]
}

// mapIDs gives every kept call an ID the target accepts and that no other
// call in the request uses, and points each result at its call's ID. IDs
// that already fit are kept (the first use of an ID keeps it); the others
// are hashed, in journal order, so the mapping is stable for a journal.
// Gemini carries IDs only on the model's own calls (the others pair by
// name and order), so only those are mapped and reported.
func (b *builder) mapIDs(p *Plan) {
	used := map[string]bool{}
	var redo []*Call
	var steps []*Step
	for i := range p.Items {
		if st := p.Items[i].Step; st != nil && (st.Own || b.t.API != Gemini) {
			steps = append(steps, st)
			for _, c := range st.Calls() {
				if ValidID(b.caps.IDRule, c.ID) && !used[c.ID] {
					used[c.ID] = true
					continue
				}
				redo = append(redo, c)
			}
		}
	}
	for _, c := range redo {
		for n := 0; ; n++ {
			id := hashedID(b.caps.IDRule, c.JournalID, n)
			if !used[id] {
				used[id] = true
				b.report.Remapped = append(b.report.Remapped, IDMapping{From: c.JournalID, To: id})
				c.ID = id
				break
			}
		}
	}
	for _, st := range steps {
		for k, c := range st.Calls() {
			st.Results[k].CallID = c.ID
		}
	}
}

// declareTools lists the target's tools, then for Anthropic a stub for
// each tool a kept call uses that the target does not offer, in order of
// first use, all under their request names, and reports the names it
// mapped.
func (b *builder) declareTools(p *Plan) {
	p.Tools = append(p.Tools, b.tools...)
	mapped := map[string]bool{}
	seen := map[string]bool{}
	for _, t := range b.t.Tools {
		seen[t.Name] = true
		b.noteToolName(t.Name, mapped)
	}
	for _, it := range p.Items {
		if it.Step == nil {
			continue
		}
		for _, c := range it.Step.Calls() {
			b.noteToolName(c.JournalName, mapped)
			if b.t.API == Anthropic && !seen[c.JournalName] {
				seen[c.JournalName] = true
				p.Tools = append(p.Tools, stubTool(c.Name))
				b.report.StubbedTools = append(b.report.StubbedTools, c.JournalName)
			}
		}
	}
}
