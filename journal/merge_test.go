package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gowebpki/jcs"
	"pgregory.net/rapid"
)

// history generates the events of several machines, each observing some
// others before it writes (so clocks are real Lamport clocks), and returns
// every machine's chain.
func history(t *rapid.T) map[string][]Event {
	machines := rapid.IntRange(1, 4).Draw(t, "machines")
	ws := make([]*Writer, machines)
	for i := range ws {
		ws[i] = NewWriter(fmt.Sprintf("m%d", i))
	}
	chains := map[string][]Event{}
	var all []Event
	steps := rapid.IntRange(0, 40).Draw(t, "steps")
	for s := 0; s < steps; s++ {
		w := ws[rapid.IntRange(0, machines-1).Draw(t, "writer")]
		if len(all) > 0 && rapid.Bool().Draw(t, "observe") {
			w.Observe(&all[rapid.IntRange(0, len(all)-1).Draw(t, "seen")])
		}
		epoch := w.Head().Epoch + uint64(rapid.IntRange(0, 1).Draw(t, "epoch step"))
		e, err := w.Next(KindUser, epoch, "", UserMessage{Text: fmt.Sprint("step ", s)})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
		chains[e.Machine] = append(chains[e.Machine], e)
	}
	return chains
}

// copyOf draws one copy of the journal: a prefix of every machine's chain,
// in total order. Copies that hold different prefixes have diverged.
func copyOf(t *rapid.T, chains map[string][]Event, label string) []Event {
	var out []Event
	for _, m := range slices.Sorted(maps.Keys(chains)) {
		n := rapid.IntRange(0, len(chains[m])).Draw(t, label+" "+m)
		out = append(out, chains[m][:n]...)
	}
	Sort(out)
	return out
}

func mustMerge(t *rapid.T, a, b []Event) []Event {
	m, err := Merge(a, b)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	return m
}

func file(events []Event) []byte { return join(linesOf(events)) }

// TestMergeProperties: merge is commutative, associative and idempotent, and
// a merge of verified journals verifies (FORMAT §7.9). rapid prints the seed
// of a failure; replay it with go test ./journal -run TestMergeProperties -rapid.seed=N.
func TestMergeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		chains := history(t)
		a, b, c := copyOf(t, chains, "a"), copyOf(t, chains, "b"), copyOf(t, chains, "c")
		for _, j := range [][]Event{a, b, c} {
			if probs := Verify(j); len(probs) > 0 {
				t.Fatalf("a generated copy does not verify: %v", probs)
			}
		}
		ab := mustMerge(t, a, b)
		if probs := Verify(ab); len(probs) > 0 {
			t.Fatalf("merge of verified journals does not verify: %v", probs)
		}
		if !bytes.Equal(file(ab), file(mustMerge(t, b, a))) {
			t.Fatal("merge is not commutative")
		}
		if !bytes.Equal(file(mustMerge(t, ab, c)), file(mustMerge(t, a, mustMerge(t, b, c)))) {
			t.Fatal("merge is not associative")
		}
		if !bytes.Equal(file(mustMerge(t, a, a)), file(a)) {
			t.Fatal("merge is not idempotent")
		}
		shuffled := rapid.Permutation(a).Draw(t, "a shuffled")
		if got, err := Merge(shuffled, b); err != nil || !bytes.Equal(file(got), file(ab)) {
			t.Fatalf("merge of an unsorted copy differs: %v", err)
		}
		if len(ab) < max(len(a), len(b)) || len(ab) > len(a)+len(b) {
			t.Fatalf("union of %d and %d has %d events", len(a), len(b), len(ab))
		}
	})
}

// TestMergeRefusesFork: two different events at one (machine, seq) make the
// merge fail with both ids named, and produce nothing.
func TestMergeRefusesFork(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		chains := history(t)
		a := copyOf(t, chains, "a")
		var m string
		var base []Event
		for _, k := range slices.Sorted(maps.Keys(chains)) {
			m, base = k, chains[k]
		}
		if base == nil {
			m = "m0"
		}
		n := rapid.IntRange(0, len(base)).Draw(t, "fork point")
		w1, w2 := NewWriter(m, base[:n]...), NewWriter(m, base[:n]...)
		e1, _ := w1.Next(KindUser, w1.Head().Epoch, "", UserMessage{Text: "left"})
		e2, _ := w2.Next(KindUser, w2.Head().Epoch, "", UserMessage{Text: "right"})
		left := append(append([]Event(nil), base[:n]...), e1)
		right := append(append([]Event(nil), base[:n]...), e2)
		for _, e := range a {
			if e.Machine != m {
				right = append(right, e)
			}
		}
		Sort(right)
		got, err := Merge(left, right)
		var fe *ForkError
		if !errors.As(err, &fe) || got != nil {
			t.Fatalf("Merge of a fork = %d events, %v", len(got), err)
		}
		if fe.Machine != m || fe.Seq != uint64(n+1) || fe.A != e1.ID || fe.B != e2.ID {
			t.Fatalf("ForkError = %+v, want machine %s seq %d ids %s %s", fe, m, n+1, e1.ID, e2.ID)
		}
	})
}

// TestIDMatchesIndependentJCS recomputes ids the long way: decode the line
// with encoding/json, drop "id", canonicalize with gowebpki/jcs, hash.
func TestIDMatchesIndependentJCS(t *testing.T) {
	events := append(build(t), chainOf(t, 5)...)
	for _, e := range events {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(Encode(e)))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		delete(m, "id")
		raw, _ := json.Marshal(m)
		c, err := jcs.Transform(raw)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(c)
		if want := "sha256:" + hex.EncodeToString(sum[:]); e.ID != want {
			t.Errorf("id %s, independent computation %s", e.ID, want)
		}
	}
}
