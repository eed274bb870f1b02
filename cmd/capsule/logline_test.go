package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
)

// TestTimelineLineMatchesFmt pins the fast timeline line to the fmt-based
// line and full decode it replaced, on ordinary bodies and on bodies
// where a shortcut could go wrong (escapes, a key matching only ignoring
// case, null, wrong types, errors, attachments, non-ASCII padding).
func TestTimelineLineMatchesFmt(t *testing.T) {
	want := func(e *journal.Event, color bool) string {
		kind := fmt.Sprintf("%-12s", e.Kind)
		if color {
			kind = colorOf(e.Kind) + kind + "\x1b[0m"
		}
		return fmt.Sprintf("%-20s %-10s %6d %4d  %s %s\n", displayTime(e.Time), shortMachine(e.Machine), e.Clock, e.Epoch, kind, summarize(e))
	}
	bodies := map[journal.Kind][]string{
		journal.KindUser: {`{"text":"hello   world"}`, `{"text":"a\nb\u0001 \"q\""}`, `{"Text":"upper"}`, `{"TEXT":"x","text":"y"}`,
			`{"text":null}`, `{"text":5}`, `{"text":"` + strings.Repeat("lorem ipsum ", 20) + `"}`, `{"text":"` + strings.Repeat("x", 98) + ` yz"}`,
			`{"text":"` + strings.Repeat("é ab ", 30) + `"}`, `{"text":"` + strings.Repeat("y", 120) + `"}`, `{"attachments":[{"blob":"sha256:00","media_type":"image/png","size":1}],"text":"see"}`, `[1,2]`, `{}`},
		journal.KindToolResult: {`{"call_id":"c1","content":"out"}`, `{"call_id":"c1","content":"` + strings.Repeat("word ", 40) + `"}`, `{"call_id":"c1","content":"bad","is_error":true}`,
			`{"call_id":"c1","content":"ok","is_error":false}`, `{"Call_ID":"c2","content":"x"}`, `{"call_id":7,"content":"x"}`},
		journal.KindAssistant: {`{"producer":{"api":"messages","model":"claude","provider":"anthropic"},"text":"hi"}`,
			`{"producer":{"Model":"m2"},"text":"hi"}`, `{"producer":null,"text":"hi"}`, `{"producer":"x","text":"hi"}`,
			`{"producer":{"model":"m"},"step":5,"text":"typed"}`, `{"text":"no producer"}`},
		journal.KindToolCall: {`{"arguments":{"a":1},"call_id":"c","name":"f","producer":{"model":"m"}}`},
		"future_kind":        {`{"x":1}`},
	}
	machines := []string{"m1", "machine-é-long-name", "日本語のマシン名前です"}
	n := 0
	for kind, bs := range bodies {
		for _, b := range bs {
			for _, m := range machines {
				for _, color := range []bool{false, true} {
					n++
					e := &journal.Event{Kind: kind, Body: []byte(b), Machine: m, Clock: uint64(n * 997), Epoch: uint64(n % 3), Time: "2026-01-02T03:04:05.123Z"}
					if n%2 == 0 {
						e.Time = ""
					}
					if got, w := string(timelineLine(nil, e, color)), want(e, color); got != w {
						t.Errorf("%s %s:\n got %q\nwant %q", kind, b, got, w)
					}
				}
			}
		}
	}
}
