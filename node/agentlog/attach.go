package agentlog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// Journal attachments name blobs of the capsule's blob folder, which the
// workspace snapshot does not reference: a move must carry them too, or
// the target's copy of the conversation would name blobs it lacks. Both
// sides keep an index of the attachments of their journal, extended as the
// journal grows, so that neither rescans thousands of events inside the
// frozen window: the source over its journal file (Attachments.Scan),
// the target over its journal copy's events (Attachments.Add).

// Attachments maps the blobs a journal's attachments name to their sizes.
type Attachments struct {
	events int   // events indexed (target side)
	bytes  int64 // bytes of the journal file indexed (source side)
	blobs  map[digest.Digest]int64
}

// Add indexes the attachments of events.
func (x *Attachments) Add(events []journal.Event) error {
	for _, e := range events {
		as, err := journal.Attachments(e)
		if err == nil {
			err = x.Note(e.ID, as)
		}
		if err != nil {
			return err
		}
	}
	x.events += len(events)
	return nil
}

// Note indexes the attachments of event id.
func (x *Attachments) Note(id string, as []journal.Attachment) error {
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

// List returns the indexed blobs sorted by digest.
func (x *Attachments) List() []transfer.Blob {
	out := make([]transfer.Blob, 0, len(x.blobs))
	for d, size := range x.blobs {
		out = append(out, transfer.Blob{Digest: d, Size: size})
	}
	slices.SortFunc(out, func(a, b transfer.Blob) int { return bytes.Compare([]byte(a.Digest), []byte(b.Digest)) })
	return out
}

// AttachmentsOf indexes events from scratch.
func AttachmentsOf(events []journal.Event) (*Attachments, error) {
	x := &Attachments{}
	return x, x.Add(events)
}

// Events returns how many events Add indexed (a target's journal copy).
func (x *Attachments) Events() int { return x.events }

// Scan indexes the attachments of the journal file at path up to end
// bytes, reading only what was appended since the last Scan: a file
// shorter than what was indexed is another journal (the agent came back),
// indexed afresh. Only lines that mention attachments are parsed.
func (x *Attachments) Scan(fsys vfs.FS, path string, end int64) error {
	if end < x.bytes {
		*x = Attachments{}
	}
	if end == x.bytes {
		return nil
	}
	f, err := fsys.Open(path)
	if err != nil {
		return fmt.Errorf("journal attachments: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(io.NewSectionReader(f, x.bytes, end-x.bytes))
	sc.Buffer(make([]byte, 64<<10), journal.MaxLine+1)
	for sc.Scan() {
		id, as, err := journal.LineAttachments(sc.Bytes())
		if err == nil {
			err = x.Note(id, as)
		}
		if err != nil {
			return fmt.Errorf("journal attachments: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("journal attachments: %w", err)
	}
	x.bytes = end
	return nil
}
