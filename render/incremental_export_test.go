package render

import (
	"fmt"
	"reflect"

	"github.com/agentcapsule/capsule/journal"
)

// SegmentsLikeFull plans events through inc and reports, as an error,
// any difference between the segmentation inc planned from and the one a
// full segment of events makes. Tests only.
func SegmentsLikeFull(inc *Incremental, events []journal.Event, t Target) error {
	if _, err := inc.Plan(events, t); err != nil && err != ErrEmpty {
		return err
	}
	got, want := inc.seg.snapshot(), segment(events)
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("segmentation of %d events differs:\n got %+v\nwant %+v", len(events), got, want)
	}
	return nil
}

// KeepsSegmentation plans events through inc and reports whether it went
// on from the previous call's segmentation rather than starting afresh.
// Tests only.
func KeepsSegmentation(inc *Incremental, events []journal.Event, t Target) (bool, error) {
	before := inc.seg
	if _, err := inc.Plan(events, t); err != nil && err != ErrEmpty {
		return false, err
	}
	return before != nil && inc.seg == before, nil
}
