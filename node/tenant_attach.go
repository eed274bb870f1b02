package node

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/transfer"
)

// Journal attachments name blobs of the capsule's blob folder, which the
// workspace snapshot does not reference: a move must carry them too, or
// the target's copy of the conversation would name blobs it lacks. Both
// sides keep an index of the attachments of their journal, extended as the
// journal grows, so that neither rescans thousands of events inside the
// frozen window: the source over its journal file (attachIndex.bytes),
// the target over its journal copy's events (attachIndex.events).

// attachIndex maps the blobs a journal's attachments name to their sizes.
type attachIndex struct {
	events int   // events indexed (target side)
	bytes  int64 // bytes of the journal file indexed (source side)
	blobs  map[digest.Digest]int64
}

// add indexes the attachments of events.
func (x *attachIndex) add(events []journal.Event) error {
	for _, e := range events {
		as, err := journal.Attachments(e)
		if err == nil {
			err = x.note(e.ID, as)
		}
		if err != nil {
			return err
		}
	}
	x.events += len(events)
	return nil
}

// note indexes the attachments of event id.
func (x *attachIndex) note(id string, as []journal.Attachment) error {
	for _, at := range as {
		d, err := digest.Parse(at.Blob)
		if err != nil || at.Size < 0 {
			return fmt.Errorf("journal: event %s: attachment %q: bad blob or size", id, at.Blob)
		}
		if x.blobs == nil {
			x.blobs = map[digest.Digest]int64{}
		}
		x.blobs[d] = at.Size
	}
	return nil
}

// list returns the indexed blobs sorted by digest.
func (x *attachIndex) list() []transfer.Blob {
	out := make([]transfer.Blob, 0, len(x.blobs))
	for d, size := range x.blobs {
		out = append(out, transfer.Blob{Digest: d, Size: size})
	}
	slices.SortFunc(out, func(a, b transfer.Blob) int { return bytes.Compare([]byte(a.Digest), []byte(b.Digest)) })
	return out
}

// attachmentsOf indexes events from scratch.
func attachmentsOf(events []journal.Event) (*attachIndex, error) {
	x := &attachIndex{}
	return x, x.add(events)
}
