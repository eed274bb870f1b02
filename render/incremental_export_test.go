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
