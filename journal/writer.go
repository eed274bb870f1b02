package journal

import (
	"errors"
	"fmt"
)

// ErrStaleEpoch marks an append under an epoch lower than the holder epoch
// (or lower than the writing machine's previous event): a fenced-off holder.
var ErrStaleEpoch = errors.New("journal: stale epoch")

// StaleEpochError is returned for an append under a stale epoch.
type StaleEpochError struct {
	Epoch  uint64 // the epoch of the refused append
	Holder uint64 // the epoch the journal is held under
}

// Error gives both epochs.
func (e *StaleEpochError) Error() string {
	return fmt.Sprintf("%v: append under epoch %d, journal is held under epoch %d", ErrStaleEpoch, e.Epoch, e.Holder)
}

// Unwrap returns ErrStaleEpoch.
func (e *StaleEpochError) Unwrap() error { return ErrStaleEpoch }

// Writer builds one machine's chain in memory: each Next returns a sealed
// event that follows the machine's previous one, with a Lamport clock one
// more than the largest clock the writer has seen. It does no I/O; the
// file-backed log (journal/logfile) and tests use it. A Writer is not safe
// for concurrent use.
type Writer struct {
	machine string
	head    Head
	clock   uint64
}

// NewWriter returns a writer for machine that has seen the given events
// (typically the journal so far, in any order).
func NewWriter(machine string, seen ...Event) *Writer {
	w := &Writer{machine: machine}
	for i := range seen {
		w.Observe(&seen[i])
	}
	return w
}

// NewWriterAfter returns a writer for machine continuing a journal whose
// summary is s (its heads give the machine's chain and the largest clock).
func NewWriterAfter(machine string, s Summary) *Writer {
	return &Writer{machine: machine, head: s.Heads[machine], clock: s.Clock()}
}

// Observe tells the writer about an event written anywhere: its clock moves
// past the event's, and an event of its own machine newer than its head
// becomes the head.
func (w *Writer) Observe(e *Event) {
	w.clock = max(w.clock, e.Clock)
	if e.Machine == w.machine && e.Seq > w.head.Seq {
		w.head = Head{Seq: e.Seq, ID: e.ID, Clock: e.Clock, Epoch: e.Epoch}
	}
}

// Machine returns the machine the writer writes for.
func (w *Writer) Machine() string { return w.machine }

// Head returns the writer's newest event.
func (w *Writer) Head() Head { return w.head }

// Clock returns the largest clock the writer has seen.
func (w *Writer) Clock() uint64 { return w.clock }

// Next builds and seals the machine's next event. Body is a value to marshal
// as JSON (a body struct of this package, a map...), or json.RawMessage or
// []byte holding JSON, or nil for {}; a body of a known kind must pass
// ValidateBody. wallTime is RFC 3339 UTC or empty; it is informational only.
// An epoch lower than the machine's previous one is refused with a
// *StaleEpochError. The writer's state changes only on success.
func (w *Writer) Next(kind Kind, epoch uint64, wallTime string, body any) (Event, error) {
	if epoch < w.head.Epoch {
		return Event{}, &StaleEpochError{Epoch: epoch, Holder: w.head.Epoch}
	}
	raw, err := MarshalBody(kind, body)
	if err != nil {
		return Event{}, fmt.Errorf("next: %w", err)
	}
	e := w.draft(kind, epoch, wallTime, raw)
	if err := Seal(&e); err != nil {
		return Event{}, fmt.Errorf("next %s: %w", kind, err)
	}
	w.Observe(&e)
	return e, nil
}

// draft fills the envelope of the machine's next event.
func (w *Writer) draft(kind Kind, epoch uint64, wallTime string, body []byte) Event {
	return Event{
		Machine: w.machine,
		Seq:     w.head.Seq + 1,
		Prev:    w.head.ID,
		Clock:   w.clock + 1,
		Epoch:   epoch,
		V:       SchemaVersion,
		Time:    wallTime,
		Kind:    kind,
		Body:    body,
	}
}
