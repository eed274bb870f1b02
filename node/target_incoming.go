package node

import (
	"errors"
	"fmt"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

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
	log, err := agentlog.Open(a.n.fsys, path, string(a.n.id), 0, 0)
	if err != nil {
		return nil, err
	}
	events, _, err := agentlog.Read(a.n.fsys, path)
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
	a.tgt.att = agentlog.Attachments{} // the next copy is indexed afresh
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

// ErrJournalGap is returned when a journal frame does not continue the
// target's copy of the journal.
var ErrJournalGap = errors.New("node: journal frame does not continue the journal")
