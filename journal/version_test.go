package journal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sealedAt returns the line of an event of kind k at envelope version v.
func sealedAt(t *testing.T, v int, k Kind, seq uint64, prev string, body string) Event {
	t.Helper()
	e := Event{Machine: "m", Seq: seq, Prev: prev, Clock: seq, Epoch: 1, V: v, Kind: k, Body: []byte(body)}
	if err := Seal(&e); err != nil {
		t.Fatal(err)
	}
	return e
}

// FORMAT §11.6: new events are written at version 2, after version-1 lines
// in the same file, and the journal verifies by chain across the boundary.
func TestMixedVersionsVerifyAcrossTheBoundary(t *testing.T) {
	old := sealedAt(t, 1, KindUser, 1, "", `{"text":"written by 0.2.0"}`)
	w := NewWriter("m", old)
	next, err := w.Next(KindAssistant, 1, "", AssistantMessage{Text: "hi", Producer: Producer{Provider: "p", API: "a", Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	if next.V != SchemaVersion || SchemaVersion != 2 {
		t.Fatalf("new event has v %d, SchemaVersion %d; want 2", next.V, SchemaVersion)
	}
	data := join(linesOf([]Event{old, next}))
	events, probs, err := Check(bytes.NewReader(data))
	if err != nil || len(probs) > 0 {
		t.Fatalf("Check: %v %v", err, probs)
	}
	if got := []int{events[0].V, events[1].V}; !cmp.Equal(got, []int{1, 2}) {
		t.Errorf("versions read %v, want [1 2]", got)
	}
	for i, e := range events {
		if e.Raw != nil {
			t.Errorf("event %d (v %d) kept raw: this release reads it", i, e.V)
		}
		if got := Encode(e); !bytes.Equal(got, linesOf([]Event{old, next})[i]) {
			t.Errorf("event %d re-encodes as %s", i, got)
		}
	}
}

// The fast path and the general path read a line of either version to the
// same event.
func TestFastPathReadsBothVersions(t *testing.T) {
	for _, v := range []int{1, 2} {
		e := sealedAt(t, v, KindUser, 1, "", `{"text":"x"}`)
		line := bytes.Clone(Encode(e))
		fast, ok := parseFast(bytes.Clone(line), nil)
		if !ok {
			t.Fatalf("v %d: the fast path refused %s", v, line)
		}
		slow, err := ParseLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if fast.V != v || slow.V != v || fast.ID != slow.ID || !bytes.Equal(fast.Body, slow.Body) {
			t.Errorf("v %d: fast %+v, slow %+v", v, fast, slow)
		}
	}
}

// FORMAT §11.6: a version-1 line of a kind version 2 adds is refused, by
// both paths, naming the event; the same line at version 2 reads.
func TestV1LineOfV2KindRefused(t *testing.T) {
	for _, k := range []Kind{"approval", "approval_request", "tool_dispatch", "effect_outcome", "tool_mapping"} {
		e := sealedAt(t, 1, k, 1, "", `{"call_id":"1"}`)
		line := bytes.Clone(Encode(e))
		if _, ok := parseFast(bytes.Clone(line), nil); ok {
			t.Errorf("%s: the fast path read a version-1 line", k)
		}
		_, err := ParseLine(line)
		var kv *KindVersionError
		if !errors.As(err, &kv) || !errors.Is(err, ErrKindVersion) || kv.ID != e.ID || kv.V != 1 || kv.Since != 2 {
			t.Errorf("%s: ParseLine = %v, want a KindVersionError for %s", k, err, e.ID)
		}
		if _, probs, _ := Check(bytes.NewReader(append(line, '\n'))); len(probs) != 1 || probs[0].Code != CodeParse {
			t.Errorf("%s: Check problems %v, want one parse problem", k, probs)
		}
		if _, err := ParseLine(Encode(sealedAt(t, 2, k, 1, "", `{"call_id":"1"}`))); err != nil {
			t.Errorf("%s at version 2: %v", k, err)
		}
	}
}
