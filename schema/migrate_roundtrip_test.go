package schema

import (
	"bytes"
	"errors"
	"testing"

	"pgregory.net/rapid"
)

// TestEnvironmentDownThenUpOfAMigratedSpec: a version-2 spec that the up
// step made from any version-1 spec converts down and up again to the same
// bytes, so a rollback of a migrated capsule followed by an upgrade (or a
// move to a 0.1.0 node and back) lands where it started.
func TestEnvironmentDownThenUpOfAMigratedSpec(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		up, err := Up(Environment, 1, 2, genSpecV1(t))
		if err != nil {
			t.Fatal(err)
		}
		down, err := Down(Environment, 2, 1, up)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Up(Environment, 1, 2, down)
		if err != nil || !bytes.Equal(again, up) {
			t.Fatalf("2 -> 1 -> 2 changed the spec (%v):\n%s\nwant\n%s", err, again, up)
		}
	})
}

// TestIndexStaleIsWhatTheUpStepMakes: a new capsule's index (StaleIndex)
// is the up step's output, CheckIndex accepts it and every index a step
// writes, and refuses what is not an index of the version it is asked for.
func TestIndexStaleIsWhatTheUpStepMakes(t *testing.T) {
	up, err := Up(MemoryIndex, 1, 2, []byte(emptyIndexV1))
	if err != nil || string(up) != StaleIndex {
		t.Fatalf("up = %q, %v; StaleIndex = %q", up, err, StaleIndex)
	}
	if err := CheckIndex(up, 2); err != nil {
		t.Fatal(err)
	}
	down, err := Down(MemoryIndex, 2, 1, up)
	if err != nil || CheckIndex(down, 1) != nil {
		t.Fatalf("down = %q, %v", down, err)
	}
	for _, tc := range []struct {
		in string
		v  int
	}{
		{emptyIndexV1, 2},
		{StaleIndex, 1},
		{`{"version":2,"embedder":null,"watermark":{"events":0,"heads":{},"working_memory":""},"chunks":[]}`, 2},
		{`{"version":2,"embedder":null,"watermark":null,"chunks":[],"extra":1}`, 2},
	} {
		if err := CheckIndex([]byte(tc.in), tc.v); !errors.Is(err, ErrInput) {
			t.Errorf("CheckIndex(%s, %d) = %v, want ErrInput", tc.in, tc.v, err)
		}
	}
	if err := CheckIndex([]byte(StaleIndex), 3); !errors.Is(err, ErrNoPath) {
		t.Errorf("version 3: %v", err)
	}
}
