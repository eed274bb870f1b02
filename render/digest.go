package render

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/journal"
)

// Limits that keep the digest short.
const (
	digestTools     = 20  // tool names listed before "and N more"
	digestToolBytes = 64  // longest tool name listed
	digestRequest   = 200 // bytes of the last dropped user request quoted
)

// digester computes the digest of a cut: the units before it are dropped.
type digester struct {
	b        *builder
	prevUser []int32 // for each unit, the newest user unit before it, or -1
	requests map[int32]string
}

func newDigester(b *builder) *digester {
	d := &digester{b: b, requests: map[int32]string{}}
	d.prevUser = make([]int32, len(b.seg.units)+1)
	last := int32(-1)
	for i, u := range b.seg.units {
		d.prevUser[i] = last
		if u.kind == unitUser {
			last = int32(i)
		}
	}
	d.prevUser[len(b.seg.units)] = last
	return d
}

// summary counts the dropped units and events before cut and the tools
// their calls used, sorted.
func (d *digester) summary(cut int) (units, events int, tools []string) {
	seen := map[int32]bool{}
	for i := 0; i < cut; i++ {
		u := &d.b.seg.units[i]
		if u.kind == unitInstr {
			continue
		}
		units++
		events += u.size()
		for _, c := range d.b.seg.callsOf(u) {
			if !seen[c.name] {
				seen[c.name] = true
				tools = append(tools, d.b.seg.callName(&c))
			}
		}
	}
	sort.Strings(tools)
	return units, events, slices.Compact(tools) // one name may be spelled two ways in JSON
}

// bound returns an event count and a tool list that no cut's digest
// exceeds: every conversational event and every tool the journal uses.
func (d *digester) bound() (events int, tools []string) {
	for raw := range d.b.seg.toolNames {
		name, _ := rawString([]byte(raw))
		tools = append(tools, name)
	}
	sort.Strings(tools)
	return d.b.seg.convEvents, slices.Compact(tools)
}

// request returns the text of the newest user request before cut,
// shortened, or "".
func (d *digester) request(cut int) string {
	i := d.prevUser[cut]
	if i < 0 {
		return ""
	}
	if s, ok := d.requests[i]; ok {
		return s
	}
	var m journal.UserMessage
	s := ""
	if d.b.decode(d.b.seg.units[i].event, &m) {
		s = shorten(m.Text, digestRequest)
	}
	d.requests[i] = s
	return s
}

// digestText is the deterministic text that stands in for dropped units.
func digestText(events int, tools []string, request string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Context note: %d earlier journal events were omitted to fit the context window.", events)
	if len(tools) > 0 {
		b.WriteString(" Tools used in the omitted part: ")
		for i, t := range tools {
			if i == digestTools {
				fmt.Fprintf(&b, " and %d more", len(tools)-digestTools)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(shorten(t, digestToolBytes))
		}
		b.WriteByte('.')
	}
	if request != "" {
		fmt.Fprintf(&b, " Last omitted user request: %q.", request)
	}
	b.WriteByte(']')
	return b.String()
}

// shorten cuts s to at most n bytes at a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
