package journal

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// mergeToBytes runs MergeTo on two encoded journals.
func mergeToBytes(a, b []byte) ([]byte, MergeStats, error) {
	var out bytes.Buffer
	st, err := MergeTo(&out, bytes.NewReader(a), bytes.NewReader(b), int64(len(a)), int64(len(b)))
	return out.Bytes(), st, err
}

// sameMerge checks MergeTo against Merge on the same two journals: the
// same lines, or the same error.
func sameMerge(t *rapid.T, a, b []Event) {
	want, wantErr := Merge(a, b)
	got, st, err := mergeToBytes(file(a), file(b))
	switch {
	case wantErr != nil:
		if err == nil || err.Error() != wantErr.Error() {
			t.Fatalf("MergeTo error %v, Merge %v", err, wantErr)
		}
	case err != nil:
		t.Fatalf("MergeTo: %v, Merge succeeded", err)
	case !bytes.Equal(got, file(want)):
		t.Fatalf("MergeTo wrote\n%s\nMerge gives\n%s", got, file(want))
	case st.A != len(a) || st.B != len(b) || st.Out != len(want):
		t.Fatalf("MergeTo counted %+v, want %d + %d -> %d", st, len(a), len(b), len(want))
	}
}

// TestMergeToMatchesMerge: for diverged copies, forks and repeated
// events, the streaming merge writes exactly Merge's result or fails
// with Merge's error.
func TestMergeToMatchesMerge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		chains := history(t)
		a, b := copyOf(t, chains, "a"), copyOf(t, chains, "b")
		sameMerge(t, a, b)
		if len(chains) == 0 {
			return
		}
		m := slices.Sorted(maps.Keys(chains))[0]
		base := chains[m]
		n := rapid.IntRange(0, len(base)).Draw(t, "fork point")
		w := NewWriter(m, base[:n]...)
		e, _ := w.Next(KindUser, w.Head().Epoch, "", UserMessage{Text: "forked"})
		forked := append(slices.Clone(b), e)
		Sort(forked)
		if probs := Verify(forked); len(probs) == 0 {
			sameMerge(t, a, forked)
			sameMerge(t, forked, a)
		}
	})
}

// TestMergeToLong merges two journals that span many read batches and
// share half their events.
func TestMergeToLong(t *testing.T) {
	shared := chainOf(t, 20000)
	fork := func(name string) []Event {
		w := NewWriter(name, shared...)
		out := slices.Clone(shared)
		for i := 0; i < 5000; i++ {
			e, err := w.Next(KindUser, 1, "", UserMessage{Text: fmt.Sprint(name, i)})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		return out
	}
	a, b := fork("x"), fork("y")
	want, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	got, st, err := mergeToBytes(file(a), file(b))
	if err != nil || !bytes.Equal(got, file(want)) || st.Out != len(want) {
		t.Fatalf("MergeTo: %v, %d events, equal %v; want %d", err, st.Out, bytes.Equal(got, file(want)), len(want))
	}
}
