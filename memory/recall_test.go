package memory

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/memory/internal/labelset"
)

// recallAt10 is the share of questions whose answer event is among the
// first ten hits of ranking r.
func recallAt10(t testing.TB, x *Index, qs []labelset.Question, r Ranking) (float64, map[string][2]int) {
	found := 0
	byKind := map[string][2]int{}
	for _, q := range qs {
		hits, err := x.SearchBy(ctx, Hash{}, q.Query, 10, r)
		if err != nil {
			t.Fatal(err)
		}
		k := byKind[q.Kind]
		k[1]++
		for _, h := range hits {
			if h.Event == q.Answer {
				found++
				k[0]++
				break
			}
		}
		byKind[q.Kind] = k
	}
	return float64(found) / float64(len(qs)), byKind
}

// labelled reads the committed labelled set (memory/testdata/labelled).
func labelled(t testing.TB) ([]journal.Event, []labelset.Question) {
	f, err := os.Open("testdata/labelled/journal.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := journal.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/labelled/questions.json")
	if err != nil {
		t.Fatal(err)
	}
	var qs []labelset.Question
	if err := json.Unmarshal(b, &qs); err != nil {
		t.Fatal(err)
	}
	return events, qs
}

// The committed set is what the generator writes from its seed
// (regenerate: go run ./memory/internal/labelgen).
func TestLabelledSetIsGenerated(t *testing.T) {
	files, err := labelset.Files(labelset.Seed)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("testdata/labelled", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/labelled/%s is not the generator's output: run go run ./memory/internal/labelgen", name)
		}
	}
}

// Issue 15: on the labelled set the default (RRF of BM25 and the hashed
// vector) beats each of its parts at recall@10.
func TestRecallOnLabelledSet(t *testing.T) {
	events, qs := labelled(t)
	x := build(t, NewCorpus(events, nil), Hash{})
	hy, hk := recallAt10(t, x, qs, Hybrid)
	lx, lk := recallAt10(t, x, qs, Lexical)
	ve, vk := recallAt10(t, x, qs, Vector)
	t.Logf("labelled set: %d events, %d chunks, %d questions", len(events), x.Len(), len(qs))
	t.Logf("recall@10: default (RRF) %.3f | BM25 alone %.3f | hashed vector alone %.3f", hy, lx, ve)
	for _, k := range slices.Sorted(maps.Keys(hk)) {
		t.Logf("  %-9s %3d/%3d | %3d | %3d", k, hk[k][0], hk[k][1], lk[k][0], vk[k][0])
	}
	if hy <= lx || hy <= ve {
		t.Errorf("the default must beat each part: %.3f vs BM25 %.3f, vector %.3f", hy, lx, ve)
	}
}
