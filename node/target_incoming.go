package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// incomingLog is a target's journal copy (incoming.jsonl), kept open so
// that a move never reads or rewrites the whole journal inside the frozen
// window: the file is open in a journal log (durable, chain-checked
// imports of the tails a source sends; its summary is the count, heads and
// digest a manifest commits), and its events are decoded in memory for the
// render. It is opened once, outside the window (at the first pre-copy
// round), and kept up to date by every import. When a move stages the
// journal, the open log goes with the file and becomes the agent's
// journal when the move activates.
type incomingLog struct {
	log    *eventLog
	events []journal.Event
}

func (l *incomingLog) pos() transfer.JournalPos { return posOf(l.events) }

// incoming returns the journal copy, opening it on first use. A copy that
// does not open or decode (a crash tore it) is cache: it is removed and the
// source will send the journal again.
func (a *tenant) incoming() (*incomingLog, error) {
	if a.tgt.inc != nil {
		return a.tgt.inc, nil
	}
	start := a.n.clock.Now()
	l, err := a.openIncoming()
	if err != nil {
		a.n.log.Warn("journal copy unreadable: starting afresh", "agent", a.id, "err", err)
		_ = a.n.fsys.Remove(a.path(incomingFile))
		if l, err = a.openIncoming(); err != nil {
			return nil, err
		}
	}
	a.n.log.Debug("journal copy opened", "agent", a.id, "events", len(l.events), "ms", a.n.clock.Now().Sub(start).Milliseconds())
	a.tgt.inc = l
	return l, nil
}

func (a *tenant) openIncoming() (*incomingLog, error) {
	if err := vfs.MkdirAllDurable(a.n.fsys, a.dir, 0o700); err != nil {
		return nil, err
	}
	path := a.path(incomingFile)
	log, err := openEventLog(a.n.fsys, path, string(a.n.id), 0, 0)
	if err != nil {
		return nil, err
	}
	events, _, err := readJournal(a.n.fsys, path)
	if err == nil && int64(len(events)) != log.Summary().Events {
		err = fmt.Errorf("journal copy: %d events decoded, the log holds %d", len(events), log.Summary().Events)
	}
	if err != nil {
		_ = log.Close()
		return nil, err
	}
	return &incomingLog{log: log, events: events}, nil
}

// dropIncoming closes and forgets the journal copy; the next use reopens
// the file.
func (a *tenant) dropIncoming() {
	if a.tgt.inc != nil {
		_ = a.tgt.inc.log.Close()
		a.tgt.inc = nil
	}
	a.tgt.att = attachIndex{} // the next copy is indexed afresh
}

// incomingPos is the position of the journal copy this node holds for an
// incoming move.
func (a *tenant) incomingPos() transfer.JournalPos {
	l, err := a.incoming()
	if err != nil {
		return transfer.JournalPos{}
	}
	return l.pos()
}

// incomingCount is the number of events of the journal copy, without
// creating one.
func (a *tenant) incomingCount() uint64 {
	if a.tgt.inc == nil && !exists(a.n.fsys, a.path(incomingFile)) {
		return 0
	}
	return a.incomingPos().Count
}

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

// truncateIncoming keeps the first count events of the journal copy (the
// source resends from an earlier position): the rare slow path, which
// rewrites the file.
func (a *tenant) truncateIncoming(count uint64) (*incomingLog, error) {
	l, err := a.incoming()
	if err != nil {
		return nil, err
	}
	var buf []byte
	for i := uint64(0); i < count; i++ {
		buf = append(append(buf, journal.Encode(l.events[i])...), '\n')
	}
	a.dropIncoming()
	if err := vfs.WriteFile(a.n.fsys, a.path(incomingFile), buf, 0o600); err != nil {
		return nil, fmt.Errorf("%w: %v", api.ErrUnavailable, err)
	}
	return a.incoming()
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
