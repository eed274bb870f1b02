package schema

import (
	"errors"
	"strings"
	"testing"
)

func TestPlanRead(t *testing.T) {
	p, err := PlanRead(Environment, 2, "0.2.0")
	if err != nil || p.Action != Read || len(p.Steps) != 0 {
		t.Fatalf("current version: %+v, %v", p, err)
	}
	p, err = PlanRead(Environment, 1, "0.1.0")
	if err != nil || p.Action != Migrate || len(p.Steps) != 1 || p.Destructive {
		t.Fatalf("older version: %+v, %v", p, err)
	}
	_, err = PlanRead(Environment, 3, "0.3.0")
	var ve *VersionError
	if !errors.As(err, &ve) || !errors.Is(err, ErrRefused) || ve.Got != 3 || ve.Max != 2 ||
		!strings.Contains(err.Error(), "environment schema version 3 (written by 0.3.0) is newer than release "+Release+" reads (up to 2); upgrade capsule") {
		t.Fatalf("newer: %v", err)
	}
	if _, err := PlanRead(Journal, 0, ""); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not a version") {
		t.Errorf("version 0: %v", err)
	}
	if _, err := PlanRead("bogus", 1, ""); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
}

// TestPlanReadMigratesAndRefusesBelowTheFloor runs on a registry where
// release 0.2.0 writes environment version 2 and reads from 2: version 1
// is then below the floor, and with the floor at 1 it migrates.
func TestPlanReadMigratesAndRefusesBelowTheFloor(t *testing.T) {
	withRegistry(t, func() {
		h := registry[Environment]
		h.Current = 2
		h.Versions = append([]Version(nil), h.Versions...)
		h.Versions[1].Since = "0.3.0"
		registry[Environment] = h
	})
	p, err := PlanRead(Environment, 1, "0.1.0")
	if err != nil || p.Action != Migrate || len(p.Steps) != 1 || p.Steps[0].To != 2 || p.Destructive {
		t.Fatalf("older: %+v, %v", p, err)
	}
	h := registry[Environment]
	h.Floor = 2
	registry[Environment] = h
	_, err = PlanRead(Environment, 1, "0.1.0")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "is older than release") || !strings.Contains(err.Error(), "release 0.1.0") {
		t.Fatalf("below the floor: %v", err)
	}
}
