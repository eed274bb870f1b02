package transfer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// readRecords reads a record log as a node writes it: one JSON Record a
// line.
func readRecords(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestSourceRecordFixtures: source records written by earlier releases
// (testdata/fixtures) recover to the same phase under the current code,
// their absent `seen` reads as 0, and a forced resolve of a move stuck
// after activate still resumes above the epoch it offered (PROTOCOL §9.2).
func TestSourceRecordFixtures(t *testing.T) {
	for _, rel := range []string{"0.1.0-c453eb8"} {
		dir := filepath.Join("testdata", "fixtures", rel)
		t.Run(rel+"/activate-sent", func(t *testing.T) {
			s, _, err := RecoverSource(readRecords(t, filepath.Join(dir, "activate-sent.jsonl")), SourceConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if !s.PastNoReturn() || !s.Frozen() || s.State().Seen != 0 {
				t.Fatalf("recovered: past no return %v, frozen %v, seen %d; want true, true, 0", s.PastNoReturn(), s.Frozen(), s.State().Seen)
			}
			rd := s.Step(Input{Kind: InForce, Operator: "alice"})
			var got uint64
			for _, a := range rd.Actions {
				if a.Kind == ActResume {
					got = a.Epoch
				}
			}
			if got <= 2 {
				t.Errorf("forced resume at %d, want above the offered epoch 2", got)
			}
		})
		t.Run(rel+"/retired", func(t *testing.T) {
			s, _, err := RecoverSource(readRecords(t, filepath.Join(dir, "retired.jsonl")), SourceConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Outcome() != OutcomeCommitted || !s.Frozen() {
				t.Errorf("recovered: outcome %s, frozen %v; want committed and frozen for good", s.Outcome(), s.Frozen())
			}
		})
	}
}
