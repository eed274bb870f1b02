package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var testProducer = Producer{Provider: "anthropic", API: "messages", Model: "claude-test"}

// build writes a small two-machine journal in total order.
func build(t testing.TB) []Event {
	t.Helper()
	a, b := NewWriter("ma"), NewWriter("mb")
	var out []Event
	add := func(w *Writer, k Kind, body any) {
		t.Helper()
		e, err := w.Next(k, 1, "2026-01-02T03:04:05Z", body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		a.Observe(&e)
		b.Observe(&e)
	}
	add(a, KindInstruction, Instruction{Role: "system", Text: "be brief"})
	add(a, KindUser, UserMessage{Text: "hello"})
	add(b, KindAssistant, AssistantMessage{Text: "hi", Producer: testProducer})
	add(b, KindToolCall, ToolCall{CallID: "c1", Name: "ls", Arguments: []byte(`{"path": "."}`), Producer: testProducer})
	add(a, KindToolResult, ToolResult{CallID: "c1", Content: "a\nb"})
	return out
}

func TestWriterRoundTrip(t *testing.T) {
	events := build(t)
	if probs := Verify(events); len(probs) > 0 {
		t.Fatalf("Verify: %v", probs)
	}
	var file bytes.Buffer
	for _, e := range events {
		file.Write(Encode(e))
		file.WriteByte('\n')
	}
	t.Logf("%s", file.Bytes())
	got, err := Decode(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(events, got); diff != "" {
		t.Errorf("Decode(Encode) (-want +got):\n%s", diff)
	}
	_, probs, err := Check(bytes.NewReader(file.Bytes()))
	if err != nil || len(probs) > 0 {
		t.Errorf("Check: %v %v", probs, err)
	}
}

func TestWriterRefusesStaleEpoch(t *testing.T) {
	w := NewWriter("m")
	if _, err := w.Next(KindUser, 5, "", UserMessage{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	_, err := w.Next(KindUser, 4, "", UserMessage{Text: "y"})
	var se *StaleEpochError
	if !errors.Is(err, ErrStaleEpoch) || !errors.As(err, &se) || se.Epoch != 4 || se.Holder != 5 {
		t.Fatalf("got %v, want StaleEpochError{4, 5}", err)
	}
	if w.Head().Seq != 1 {
		t.Errorf("a refused append moved the head to %d", w.Head().Seq)
	}
}

// The lines this release writes take the fast path (a slow path would still
// be right, but reading a journal would be several times slower).
func TestWrittenLinesTakeFastPath(t *testing.T) {
	in := newInterner(false, 0)
	for _, e := range append(build(t), chainOf(t, 6)...) {
		got, ok := parseFast(Encode(e), in)
		if !ok {
			t.Fatalf("fast path refuses %s", Encode(e))
		}
		if diff := cmp.Diff(e, got); diff != "" {
			t.Errorf("fast path (-want +got):\n%s", diff)
		}
	}
}

func TestMarshalBody(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind Kind
		body any
		want string // canonical body, or the error text
	}{
		{"struct", KindUser, UserMessage{Text: "<hi>"}, `{"text":"<hi>"}`},
		{"pointer", KindInstruction, &Instruction{Role: "system", Text: "x"}, `{"role":"system","text":"x"}`},
		{"raw, reordered", KindUser, json.RawMessage(`{ "text" : "a", "attachments": [] }`), `{"attachments":[],"text":"a"}`},
		{"nil is {}", KindResumed, nil, `{}`},
		{"map", KindFrozen, map[string]string{"reason": "r"}, `{"reason":"r"}`},
		{"struct missing producer", KindAssistant, AssistantMessage{Text: "t"}, "producer.provider is required"},
		{"raw unknown member", KindUser, []byte(`{"text":"a","x":1}`), `unknown field "x"`},
		{"nil where reason needed", KindFrozen, nil, "reason is required"},
		{"lossy number", KindToolCall, ToolCall{CallID: "c", Name: "n", Arguments: json.RawMessage(`{"id":12345678901234567890}`), Producer: testProducer}, "not exactly representable"},
		{"unknown kind, any JSON", Kind("future"), []byte(`[1,2]`), `[1,2]`},
	} {
		got, err := MarshalBody(tc.kind, tc.body)
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
			}
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}
