package journal

import (
	"io"
	"sync/atomic"
)

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
	return EachWith(r, nil, func(e *Event, pos Pos, _ struct{}) error { return visit(e, pos) })
}

// EachWith is Each with a step that runs on the parsing goroutines: prep,
// if not nil, derives a value from each event there (it must be safe for
// concurrent use, and its value may alias the event's Body), and visit
// receives it beside the event, in file order. It moves per-event work off
// the one goroutine that visits.
func EachWith[T any](r io.Reader, prep func(e *Event) T, visit func(e *Event, pos Pos, v T) error) error {
	var first error
	var stop atomic.Bool
	cfg := streamConfig{strict: true, recycle: true, stop: &stop}
	if prep != nil {
		cfg.prep = prepAll(prep)
	}
	err := stream(r, cfg, func(b *batch) {
		vs, _ := b.extra.([]T)
		for i := range b.events {
			if first != nil {
				break
			}
			var v T
			if prep != nil {
				v = vs[i]
			}
			first = visit(&b.events[i], Pos{Line: b.lines[i], Body: b.bodies[i]}, v)
		}
		if first == nil && len(b.fails) > 0 {
			first = b.fails[0].err
		}
		if first != nil {
			stop.Store(true)
		}
	})
	if first != nil {
		return first
	}
	return err
}
