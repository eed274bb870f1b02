package agentlog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/journal/logfile"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// Log is an agent's journal as the node writes it: a logfile.Log
// (durable, group-committed appends, fenced at the holder epoch, a torn
// last line quarantined on open) written by this node's machine ID.
type Log struct {
	l       *logfile.Log
	machine string
	// onAppend, when set, sees every event this Log wrote, after it is
	// durable (SetOnAppend). hookMu, held across each write and its
	// notification while a hook is set, makes the hook see events in the
	// journal's order: a watcher that counts them can resume from the
	// count.
	onAppend func(journal.Event)
	hookMu   sync.Mutex
}

// SetOnAppend makes f see every event written through the log (Append,
// AppendAll and the new events of Import) once each is durable, in the
// order of the journal file. It must be set before appends start (where
// the log is opened); f runs on the appending goroutine and must not
// block or append. With a hook set, writes through the log are made one
// at a time (concurrent appenders no longer share an fsync).
func (e *Log) SetOnAppend(f func(journal.Event)) { e.onAppend = f }

// ordered takes hookMu while a hook is set and returns its release.
func (e *Log) ordered() func() {
	if e.onAppend == nil {
		return func() {}
	}
	e.hookMu.Lock()
	return e.hookMu.Unlock
}

// notify passes events to the append hook, if one is set.
func (e *Log) notify(events ...journal.Event) {
	if e.onAppend == nil {
		return
	}
	for _, ev := range events {
		e.onAppend(ev)
	}
}

// Open opens (creating if needed) the journal at path for machine,
// fenced at holder. committed is how many bytes a manifest committed.
func Open(fsys vfs.FS, path, machine string, holder uint64, committed int64) (*Log, error) {
	l, err := logfile.Open(logfile.Config{FS: fsys, Path: path, Epoch: holder, Committed: committed})
	if err != nil {
		return nil, err
	}
	return &Log{l: l, machine: machine}, nil
}

// Quarantined reports torn lines the log set aside when it opened.
func (e *Log) Quarantined() []logfile.Quarantine { return e.l.Quarantined() }

// Append writes one event under epoch and returns it once it is durable.
func (e *Log) Append(kind journal.Kind, epoch uint64, wall string, body any) (journal.Event, error) {
	defer e.ordered()()
	ev, err := e.l.Append(e.machine, kind, epoch, wall, body)
	if err == nil {
		e.notify(ev)
	}
	return ev, err
}

// AppendAll writes events of this machine under epoch as one unit, with
// one write and one fsync and no other event between them
// (logfile.Log.AppendAll), and returns them once durable.
func (e *Log) AppendAll(epoch uint64, wall string, kinds []journal.Kind, bodies []any) ([]journal.Event, error) {
	defer e.ordered()()
	events, err := e.l.AppendAll(e.machine, epoch, wall, kinds, bodies)
	if err == nil {
		e.notify(events...)
	}
	return events, err
}

// Import adds events sealed elsewhere (a move's journal tail), durably,
// after checking they continue the journal; it returns how many it wrote.
// Events the journal already held are skipped, and not passed to the
// append hook.
func (e *Log) Import(events []journal.Event) (int, error) {
	defer e.ordered()()
	var before map[string]journal.Head
	if e.onAppend != nil {
		before = e.l.Summary().Heads
	}
	n, err := e.l.Import(events)
	if err == nil && n > 0 && e.onAppend != nil {
		for _, ev := range events {
			if ev.Seq > before[ev.Machine].Seq {
				e.notify(ev)
			}
		}
	}
	return n, err
}

// Pos returns the journal's position: event count and the ID of its last
// event (the newest head: the file is kept in clock order).
func (e *Log) Pos() transfer.JournalPos {
	return PosOfSummary(e.l.Summary())
}

// PosOfSummary returns the position a summary records: its event count and
// the ID of its newest head.
func PosOfSummary(s journal.Summary) transfer.JournalPos {
	var last journal.Head
	for _, h := range s.Heads {
		if h.Clock > last.Clock {
			last = h
		}
	}
	return transfer.JournalPos{Count: uint64(s.Events), Head: last.ID}
}

// Summary returns the summary of every event appended so far.
func (e *Log) Summary() journal.Summary { return e.l.Summary() }

// Fence raises the epoch below which appends are refused.
func (e *Log) Fence(holder uint64) { e.l.SetEpoch(holder) }

// Epoch returns the fence: the holder epoch it was opened or fenced at, or
// the highest epoch in the journal if that is higher.
func (e *Log) Epoch() uint64 { return e.l.Epoch() }

// Close closes the file; every append is already durable.
func (e *Log) Close() error { return e.l.Close() }

// Read returns the complete events of the journal at path and the
// byte length they occupy (a torn final line is excluded), without
// changing the file.
func Read(fsys vfs.FS, path string) ([]journal.Event, int64, error) {
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read journal: %w", err)
	}
	size := int64(bytes.LastIndexByte(data, '\n') + 1)
	events, err := journal.Decode(bytes.NewReader(data[:size]))
	if err != nil {
		return nil, 0, fmt.Errorf("read journal %s: %w", path, err)
	}
	return events, size, nil
}

// PosOf returns the position after events: their count and the ID of the
// last.
func PosOf(events []journal.Event) transfer.JournalPos {
	if len(events) == 0 {
		return transfer.JournalPos{}
	}
	return transfer.JournalPos{Count: uint64(len(events)), Head: events[len(events)-1].ID}
}
