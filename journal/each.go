package journal

import "io"

// Pos locates an event that Each hands out in the stream it reads.
type Pos struct {
	Line int   // the line number, from 1
	Body int64 // the offset of the event's body in the stream
}

// Each reads a journal as it streams by and calls visit with each event in
// file order, parsing on every core; memory stays bounded whatever the
// journal's length. Like Decode it checks each line (canonical JSON, the
// envelope, the id) but not chains or order, and the first line that does
// not parse stops it with a *LineError. An error from visit stops it too
// and is returned as it is. The event's Body and Raw alias a buffer that is
// reused once visit returns: visit may keep the other fields, but must
// copy Body or Raw to keep them; pos.Body says where the body sits in r,
// for a reader that reads it again later (io.ReaderAt).
func Each(r io.Reader, visit func(e *Event, pos Pos) error) error {
	var first error
	err := stream(r, 0, true, true, func(b *batch) {
		for i := range b.events {
			if first != nil {
				return
			}
			if b.fails != nil && b.fails[0].problem.Line < b.lines[i] {
				break
			}
			first = visit(&b.events[i], Pos{Line: b.lines[i], Body: b.bodies[i]})
		}
		if first == nil && len(b.fails) > 0 {
			first = b.fails[0].err
		}
	})
	if first != nil {
		return first
	}
	return err
}
