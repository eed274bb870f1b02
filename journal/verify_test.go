package journal

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// chainOf writes n events alternating between machines a and b, clocks
// 1..n, all under epoch 1.
func chainOf(t testing.TB, n int) []Event {
	t.Helper()
	ws := []*Writer{NewWriter("a"), NewWriter("b")}
	var out []Event
	for i := 0; i < n; i++ {
		e, err := ws[i%2].Next(KindUser, 1, "", UserMessage{Text: fmt.Sprint("message ", i)})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			w.Observe(&e)
		}
		out = append(out, e)
	}
	return out
}

func linesOf(events []Event) [][]byte {
	var out [][]byte
	for _, e := range events {
		out = append(out, bytes.Clone(Encode(e)))
	}
	return out
}

func join(lines [][]byte) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// reseal changes an event and seals it again, so its id is right and only
// the chain can tell.
func reseal(t testing.TB, e Event, change func(*Event)) []byte {
	t.Helper()
	change(&e)
	if err := Seal(&e); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(Encode(e))
}

type found struct {
	Line int
	Code string
}

func foundOf(probs []Problem) []found {
	var got []found
	for _, p := range probs {
		got = append(got, found{p.Line, p.Code})
	}
	return got
}

// TestHostileJournals feeds broken journals to Check (FORMAT §7.4, §7.6):
// each must give a precise problem, with its line and machine.
func TestHostileJournals(t *testing.T) {
	base := chainOf(t, 6) // lines 1..6: a1 b1 a2 b2 a3 b3
	future := []byte(`{"body":{"hologram":[1,2]},"clock":7,"epoch":1,"id":"sha256:0000000000000000000000000000000000000000000000000000000000000000","kind":"hologram","machine":"a","prev":"` + base[4].ID + `","seq":4,"v":1}`)
	future = fixID(t, future)
	for _, tc := range []struct {
		name    string
		mutate  func(lines [][]byte) [][]byte
		want    []found
		machine string // machine of the first problem
		msg     string // part of the first problem's message
	}{
		{"bad JSON", func(ls [][]byte) [][]byte { ls[2] = []byte(`{"body":`); return ls },
			[]found{{3, CodeParse}, {5, CodeSeq}}, "", "invalid JSON"},
		{"whitespace is not canonical", func(ls [][]byte) [][]byte {
			ls[1] = bytes.Replace(ls[1], []byte(`"clock":`), []byte(`"clock": `), 1)
			return ls
		},
			[]found{{2, CodeParse}, {4, CodeSeq}}, "b", "not in canonical form"},
		{"tampered content", func(ls [][]byte) [][]byte {
			ls[3] = bytes.Replace(ls[3], []byte("message 3"), []byte("message X"), 1)
			return ls
		},
			[]found{{4, CodeID}, {6, CodeSeq}}, "b", "id does not match content"},
		{"huge line", func(ls [][]byte) [][]byte { ls[1] = bytes.Repeat([]byte("x"), MaxLine+10); return ls },
			[]found{{2, CodeParse}, {4, CodeSeq}}, "", "line too long"},
		{"duplicate event", func(ls [][]byte) [][]byte { return append(ls, ls[5]) },
			[]found{{7, CodeOrder}, {7, CodeDuplicate}}, "b", "repeats line 6"},
		{"forged chain", func(ls [][]byte) [][]byte {
			ls[4] = reseal(t, base[4], func(e *Event) { e.Prev = base[0].ID })
			ls = ls[:5]
			return ls
		}, []found{{5, CodePrev}}, "a", "is not the id of seq 2 at line 3"},
		{"reordered lines", func(ls [][]byte) [][]byte { ls[2], ls[3] = ls[3], ls[2]; return ls },
			[]found{{4, CodeOrder}}, "a", "does not come after"},
		{"clock going backwards", func(ls [][]byte) [][]byte {
			ls[4] = reseal(t, base[4], func(e *Event) { e.Clock = 2 })
			return ls[:5]
		}, []found{{5, CodeOrder}, {5, CodeClock}}, "a", "does not come after"},
		{"clock repeated along one machine", func(ls [][]byte) [][]byte {
			// a3 right after a2, at a2's clock: the order (clock, machine, seq)
			// still rises, so only the chain's strict clock rule sees it.
			return append(ls[:3], reseal(t, base[4], func(e *Event) { e.Clock = base[2].Clock }))
		}, []found{{4, CodeClock}}, "a", "clock 3 is not greater than clock 3 of seq 2 at line 3"},
		{"epoch going backwards", func(ls [][]byte) [][]byte {
			ls[4] = reseal(t, base[4], func(e *Event) { e.Epoch = 0 })
			return ls[:5]
		}, []found{{5, CodeEpoch}}, "a", "epoch 0 is lower than epoch 1"},
		{"seq gap", func(ls [][]byte) [][]byte { return append(ls[:2], ls[3:]...) },
			[]found{{4, CodeSeq}}, "a", "seq 3 does not follow seq 1 at line 1"},
		{"fork", func(ls [][]byte) [][]byte {
			other := reseal(t, base[4], func(e *Event) { e.Body = []byte(`{"text":"other"}`); e.Clock = 7 })
			return append(ls, other)
		}, []found{{7, CodeFork}}, "a", "seq 3 is"},
		{"torn last line", func(ls [][]byte) [][]byte { return ls }, []found{{7, CodeTorn}}, "", "incomplete last line"},
		{"empty line", func(ls [][]byte) [][]byte { return append(ls[:3], append([][]byte{{}}, ls[3:]...)...) },
			[]found{{4, CodeParse}}, "", "empty line"},
		{"CRLF", func(ls [][]byte) [][]byte { ls[0] = append(ls[0], '\r'); return ls },
			[]found{{1, CodeParse}, {3, CodeSeq}}, "a", "invalid JSON"},
		{"unknown kind from the future", func(ls [][]byte) [][]byte { return append(ls, future) }, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := join(tc.mutate(linesOf(base)))
			if tc.name == "torn last line" {
				data = append(data, `{"body":{"te`...)
			}
			before := bytes.Clone(data)
			_, probs, err := Check(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, foundOf(probs)); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%v", diff, probs)
			}
			if len(tc.want) > 0 && !hasProblem(probs, tc.machine, tc.msg) {
				t.Errorf("problems %v: none with machine %q and message with %q", probs, tc.machine, tc.msg)
			}
			if !bytes.Equal(data, before) {
				t.Error("Check changed its input")
			}
			if _, err := Decode(bytes.NewReader(data)); (err != nil) != hasParseProblem(probs) {
				t.Errorf("Decode error %v, but parse problems %v", err, probs)
			}
		})
	}
}

func hasProblem(probs []Problem, machine, msg string) bool {
	for _, p := range probs {
		if p.Machine == machine && strings.Contains(p.Msg, msg) {
			return true
		}
	}
	return false
}

func hasParseProblem(probs []Problem) bool {
	for _, p := range probs {
		switch p.Code {
		case CodeParse, CodeID, CodeTorn:
			return true
		}
	}
	return false
}

// fixID replaces the id of a hand-written line with the right one.
func fixID(t testing.TB, line []byte) []byte {
	t.Helper()
	var buf [16]span
	s := scanner{b: line}
	spans, err := s.topLevel(buf[:0])
	if err != nil {
		t.Fatal(err)
	}
	e := Event{Raw: line}
	id, err := ComputeID(&e)
	if err != nil {
		t.Fatal(err)
	}
	_ = spans
	return bytes.Replace(line, []byte("sha256:"+strings.Repeat("0", 64)), []byte(id), 1)
}

func TestUnknownKindPreservedByteForByte(t *testing.T) {
	line := fixID(t, []byte(`{"body":{"a":[1.5,true,null],"z":"\u001f"},"clock":1,"epoch":0,"future":{"x":1},"id":"sha256:`+strings.Repeat("0", 64)+`","kind":"telepathy","machine":"m","seq":1,"v":3}`))
	e, err := ParseLine(line)
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind.Known() || e.Raw == nil {
		t.Fatalf("kind %q known=%v raw=%v", e.Kind, e.Kind.Known(), e.Raw != nil)
	}
	if got := Encode(e); !bytes.Equal(got, line) {
		t.Errorf("Encode = %s\nwant     %s", got, line)
	}
	if probs := Verify([]Event{e}); len(probs) > 0 {
		t.Errorf("Verify: %v", probs)
	}
	merged, err := Merge([]Event{e}, nil)
	if err != nil || !bytes.Equal(Encode(merged[0]), line) {
		t.Errorf("Merge lost the raw line: %v", err)
	}
}

func TestUnknownMemberInV1Refused(t *testing.T) {
	line := fixID(t, []byte(`{"body":{},"clock":1,"epoch":0,"extra":1,"id":"sha256:`+strings.Repeat("0", 64)+`","kind":"user","machine":"m","seq":1,"v":1}`))
	if _, err := ParseLine(line); err == nil || !strings.Contains(err.Error(), `unknown member "extra"`) {
		t.Fatalf("got %v, want an unknown member error", err)
	}
}

func TestVerifyTail(t *testing.T) {
	events := chainOf(t, 10)
	committed := Summarize(events[:6])
	tail := join(linesOf(events[6:]))
	probs, err := VerifyTail(committed, bytes.NewReader(tail))
	if err != nil || len(probs) > 0 {
		t.Fatalf("VerifyTail of a good tail: %v %v", probs, err)
	}
	// A tail that skips an event of machine b.
	bad := join(linesOf([]Event{events[6], events[8], events[9]}))
	probs, _ = VerifyTail(committed, bytes.NewReader(bad))
	if diff := cmp.Diff([]found{{9, CodeSeq}}, foundOf(probs)); diff != "" {
		t.Errorf("skipped event (-want +got):\n%s", diff)
	}
	// A tail that repeats a committed event.
	probs, _ = VerifyTail(committed, bytes.NewReader(join(linesOf(events[5:]))))
	if len(probs) == 0 || probs[0].Line != 7 || !strings.Contains(probs[0].Msg, "committed") {
		t.Errorf("repeated committed event: %v", probs)
	}
}

func TestVerifyFindsForgedIDInMemory(t *testing.T) {
	events := chainOf(t, 4)
	events[2].Body = []byte(`{"text":"forged"}`)
	probs := Verify(events)
	if len(probs) != 1 || probs[0].Line != 3 || probs[0].Code != CodeID {
		t.Errorf("Verify = %v, want an id problem at line 3", probs)
	}
}

func TestSummaryValidate(t *testing.T) {
	s := Summarize(chainOf(t, 5))
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	s.Events = 4
	if err := s.Validate(); err == nil {
		t.Error("a summary whose heads disagree with its count validated")
	}
}
