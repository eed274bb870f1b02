package remote

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/memory"
	"github.com/agentcapsule/capsule/provider/sim"
)

// Embed normalises what the provider sends (Gemini's vectors below 3072
// dimensions are not unit length) and refuses what it cannot use.
func TestAccept(t *testing.T) {
	e := &embedder{cfg: Config{Provider: Gemini, Model: "m"}, id: memory.Identity{Dims: 2}}
	vecs := [][]float32{{3, 4}, {0, -2}}
	if err := e.accept(vecs, 2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]float32{{0.6, 0.8}, {0, -1}}, vecs); diff != "" {
		t.Errorf("normalised (-want +got):\n%s", diff)
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	bad := []struct {
		vecs [][]float32
		want string
	}{
		{[][]float32{{1, 0}}, "1 vectors for 2 texts"},
		{[][]float32{{1, 0}, {1}}, "vector 1 has 1 values, want 2"},
		{[][]float32{{nan, 0}, {1, 0}}, "vector 0: value 0 is NaN"},
		{[][]float32{{1, 0}, {0, inf}}, "vector 1: value 1 is +Inf"},
		{[][]float32{{0, 0}, {1, 0}}, "vector 0: zero vector"},
	}
	for _, b := range bad {
		err := e.accept(b.vecs, 2)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "gemini: malformed answer: "+b.want) {
			t.Errorf("%v: err = %v, want %q", b.vecs, err, b.want)
		}
	}
}

// Batches keep within the provider's limits, in order; a text longer
// than the byte limit goes alone.
func TestBatches(t *testing.T) {
	texts := []string{"aaaa", "bb", "cccccc", "d", "eeeeeeeeeeee", "f"}
	got := limits{texts: 2, bytes: 8}.batches(texts, []int{0, 1, 2, 3, 4, 5})
	if diff := cmp.Diff([][]int{{0, 1}, {2, 3}, {4}, {5}}, got); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
	if l := batchLimits[OpenAI].cap(10); l.texts != 10 || batchLimits[Gemini].cap(500).texts != 100 {
		t.Errorf("cap: %+v", l)
	}
}

// The simulator's model is known with the length it serves.
func TestKnownSimDims(t *testing.T) {
	for p, models := range knownDims {
		if models[sim.Embed] != sim.EmbedDims {
			t.Errorf("%s: %s has %d dims here, the simulator serves %d", p, sim.Embed, models[sim.Embed], sim.EmbedDims)
		}
	}
}
