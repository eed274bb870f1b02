package schema

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestStepsOnReleaseFixtures runs the steps over what every earlier release
// wrote (testdata/fixtures/<release>/capsules, made by scripts/fixtures.sh):
// each spec, index and journal line migrates up and converts back down to
// the same bytes.
func TestStepsOnReleaseFixtures(t *testing.T) {
	caps, err := filepath.Glob("../testdata/fixtures/*/capsules/*")
	if err != nil || len(caps) == 0 {
		t.Fatalf("no fixtures (%v): run scripts/fixtures.sh", err)
	}
	for _, c := range caps {
		for _, f := range []struct {
			kind Kind
			path string
		}{{Environment, "environment/spec.json"}, {MemoryIndex, "memory/vector_index/index.json"}} {
			b, err := os.ReadFile(filepath.Join(c, f.path))
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, c+"/"+f.path, f.kind, b)
		}
		j, err := os.ReadFile(filepath.Join(c, "memory/timeline_events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(j, []byte("\n")), []byte("\n")) {
			if len(line) > 0 {
				roundTrip(t, fmt.Sprintf("%s journal line %d", c, i+1), Journal, line)
			}
		}
	}
}

func roundTrip(t *testing.T, name string, k Kind, b []byte) {
	t.Helper()
	up, err := Up(k, 1, Newest(k), b)
	if err != nil {
		t.Errorf("%s: up: %v", name, err)
		return
	}
	down, err := Down(k, Newest(k), 1, up)
	if err != nil || !bytes.Equal(down, b) {
		t.Errorf("%s: down gives %s, %v; want\n%s", name, down, err, b)
	}
}
