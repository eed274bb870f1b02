package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/transfer"
)

// appendIncoming makes the journal copy hold its first count events
// followed by the lines of r, durably, refusing lines that do not parse or
// do not continue every chain (the earlier events were checked when they
// arrived). It returns the number of events added.
func (a *tenant) appendIncoming(count uint64, r io.Reader) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	data, err := io.ReadAll(r)
	if err != nil {
		return 0, fmt.Errorf("%w: journal frame: %v", api.ErrInvalid, err)
	}
	if a.journalStaged() {
		return 0, nil // a duplicate prepare: it gets the recorded answer
	}
	tail, err := journal.Decode(bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("%w: journal frame: %v", api.ErrInvalid, err)
	}
	l, err := a.incoming()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", api.ErrUnavailable, err)
	}
	have := uint64(len(l.events))
	if have < count {
		return 0, fmt.Errorf("%w: %w: it starts after event %d, this node has %d", api.ErrConflict, ErrJournalGap, count, have)
	}
	if have > count {
		if l, err = a.truncateIncoming(count); err != nil {
			return 0, err
		}
	}
	n, err := l.log.Import(tail)
	var ve *journal.VerifyError
	var fe *journal.ForkError
	switch {
	case errors.As(err, &ve) || errors.As(err, &fe):
		return 0, fmt.Errorf("%w: journal frame: %v", api.ErrInvalid, err)
	case err != nil:
		a.dropIncoming()
		return 0, fmt.Errorf("%w: %v", api.ErrUnavailable, err)
	case n != len(tail):
		a.dropIncoming()
		return 0, fmt.Errorf("%w: journal frame: %d of its %d events were already in the copy", api.ErrInvalid, len(tail)-n, len(tail))
	}
	l.events = append(l.events, tail...)
	if a.holder.Pending() != nil {
		a.renderAhead() // this tail may complete the journal of the pending move
	}
	return n, nil
}

// journalStaged reports whether the journal copy is in the staging of the
// pending move because that move is prepared (then a resent prepare's
// journal lines are not needed). Staging of a pending move that is not
// prepared (a prepare interrupted by a restart, about to run again) is
// discarded first, bringing the journal copy back.
func (a *tenant) journalStaged() bool {
	p := a.holder.Pending()
	if p == nil || !exists(a.n.fsys, a.staging(p.Move)) {
		return false
	}
	if p.Phase == transfer.PhasePrepared {
		return true
	}
	if err := a.discard(p.Move); err != nil {
		a.n.log.Warn("discarding an interrupted staging", "agent", a.id, "move", p.Move, "err", err)
	}
	return false
}
