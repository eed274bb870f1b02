// Package logfile is the durable, file-backed journal: appends that return
// only once their bytes are on disk, group-committed so concurrent appenders
// share one fsync, fenced by the holder epoch, and recovered on open by
// moving a torn last line to a quarantine file (docs/FORMAT.md §7.8).
//
// Open reads the file once, as it streams by: it can check the manifest's
// record of the committed prefix (Config.Expect) and hand every event to
// the caller (Config.Visit) in that same pass; Each streams a journal's
// complete lines without opening it for writing.
//
// It owns one journal file (memory/timeline_events.jsonl) through a vfs.FS;
// the rules for what goes in the file live in package journal. The capsule,
// node and command packages import it; the pure packages never do.
package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/vfs"
)

// Errors of the log.
var (
	// ErrClosed is returned by operations on a closed log.
	ErrClosed = errors.New("logfile: closed")
	// ErrBroken is returned once a failed write could not be undone: the
	// file may hold bytes no caller was told about, so the log refuses to go
	// on until it is opened again (which quarantines them).
	ErrBroken = errors.New("logfile: broken by a failed write")
	// ErrShort marks a journal shorter than the prefix a manifest committed:
	// committed events were lost, which no crash of a correct writer causes.
	ErrShort = errors.New("logfile: journal shorter than committed")
	// ErrCommitted marks a journal whose committed prefix is not the one
	// Config.Expect records.
	ErrCommitted = errors.New("logfile: committed journal does not match its record")
)

// Config says which journal to open and under which holder epoch.
type Config struct {
	// FS is the file system; nil means vfs.OS.
	FS vfs.FS
	// Path is the journal file. Open creates it, empty, when it is missing.
	Path string
	// Epoch is the holder epoch. An append under a lower epoch is refused
	// with journal.ErrStaleEpoch, as is one under an epoch lower than the
	// highest epoch already in the journal.
	Epoch uint64
	// Committed is how many bytes of the file a manifest has committed.
	// Open never moves those to quarantine: a bad line inside them is
	// corruption, not a torn append, and Open fails instead.
	Committed int64
	// Expect, when set, is the manifest's record of the committed journal
	// (its Bytes is then the committed length, whatever Committed says).
	// Open checks it in the same pass that loads the log: the first
	// Expect.Bytes bytes hash to Expect.Digest and end with a newline, and
	// the heads after Expect.Events events are Expect.Heads; otherwise it
	// fails with ErrCommitted. A caller that sets it need not read the
	// committed prefix again to check it.
	Expect *journal.Summary
	// Visit, when set, is called with every event Open reads, in file
	// order, with its line number (the whole journal, torn last line
	// excepted). The event's Body aliases a buffer reused once Visit
	// returns. It lets a caller gather what it needs of the journal (its
	// attachments, counts) without reading it again.
	Visit func(e *journal.Event, line int)
}

// Quarantine describes a torn or unparsable last line that Open moved out
// of the journal into a file beside it.
type Quarantine struct {
	Path   string `json:"path"`   // the quarantine file
	Line   int    `json:"line"`   // the line number it had in the journal
	Bytes  int64  `json:"bytes"`  // its length
	Reason string `json:"reason"` // why it was not kept
}

// QuarantineSuffix starts the suffix of quarantine files: a journal at P
// moves a torn last line to P.quarantine-1, then P.quarantine-2, and so on.
const QuarantineSuffix = ".quarantine-"

// Log is an open journal file. Its methods are safe for concurrent use. A
// journal file must be open in at most one Log at a time.
type Log struct {
	fsys vfs.FS
	path string

	mu      sync.Mutex
	cond    *sync.Cond
	f       vfs.File
	pending []*request
	leading bool   // a goroutine is writing a batch
	epoch   uint64 // the fence: max(holder epoch, highest epoch written)
	state   state  // what is durably in the file
	closed  bool
	broken  error
	quarant []Quarantine
	stats   Stats

	arrived   chan struct{} // signalled when a request queues
	lastBatch int           // requests in the previous batch
	lastSync  time.Duration // how long the previous batch took to write and sync
}

// state is what the log knows of the file's durable contents.
type state struct {
	sum  *journal.Summarizer
	last journal.Event // the newest event in total order (envelope only)
	size int64
}

// request is one append waiting for the leader to write it.
type request struct {
	machine string
	kind    journal.Kind
	epoch   uint64
	time    string
	body    []byte
	sealed  []journal.Event // set for Import: events sealed elsewhere
	more    []part          // set for AppendAll: the events after the first

	events []journal.Event // every event an AppendAll request sealed

	event journal.Event
	n     int // events Import wrote
	err   error
	done  chan struct{} // closed when a follower's request is finished
}

// Open opens the journal at cfg.Path, creating it when missing. It checks
// the whole journal (ids, chains, order); a torn or unparsable last line
// beyond cfg.Committed is moved to a quarantine file and reported by
// Quarantined, any other problem fails Open with a *journal.VerifyError and
// changes nothing.
func Open(cfg Config) (*Log, error) {
	fsys := cfg.FS
	if fsys == nil {
		fsys = vfs.OS{}
	}
	l := &Log{fsys: fsys, path: cfg.Path, epoch: cfg.Epoch}
	l.cond = sync.NewCond(&l.mu)
	l.arrived = make(chan struct{}, 1)
	if err := l.open(cfg); err != nil {
		if l.f != nil {
			l.f.Close()
		}
		return nil, fmt.Errorf("open journal %s: %w", cfg.Path, err)
	}
	return l, nil
}

func (l *Log) open(cfg Config) error {
	committed := cfg.Committed
	if cfg.Expect != nil {
		committed = cfg.Expect.Bytes
	}
	if err := l.create(); err != nil {
		return err
	}
	f, err := l.fsys.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	l.f = f
	// One writer at a time, across processes too: a second writer (the CLI
	// appending to a journal a node holds open) would interleave appends
	// and fork the chains.
	if err := vfs.TryLock(f); err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return fmt.Errorf("%w (another process, or another open of it, is writing this journal: a node that holds the agent keeps its journal open)", err)
		}
		return err
	}
	h := digest.NewHasher()
	pre := &prefixHash{h: digest.NewHasher(), limit: committed}
	ld := loader{visit: cfg.Visit}
	if cfg.Expect != nil {
		ld.at = cfg.Expect.Events
	}
	probs, err := journal.Scan(io.TeeReader(f, io.MultiWriter(h, pre)), ld.visitEvent)
	if err != nil {
		return err
	}
	good := h.Size()
	if len(probs) > 0 {
		if good, err = l.recover(probs, committed); err != nil {
			return err
		}
		h = digest.NewHasher()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, good)); err != nil {
			return err
		}
	}
	if good < committed {
		return fmt.Errorf("%w: the journal has %d bytes, fewer than the %d the manifest committed", ErrShort, good, committed)
	}
	if cfg.Expect != nil {
		if err := pre.check(*cfg.Expect, ld.headsAt); err != nil {
			return err
		}
	}
	sum := journal.Summary{Events: ld.events, Bytes: good, Heads: ld.heads}
	l.state = state{sum: journal.NewSummarizerFrom(sum, h), last: ld.last, size: good}
	l.epoch = max(l.epoch, ld.epoch)
	_, err = f.Seek(good, io.SeekStart)
	return err
}

// loader collects what the log needs from a journal streaming past.
type loader struct {
	events  int64
	heads   map[string]journal.Head
	last    journal.Event
	epoch   uint64
	at      int64                   // how many events are committed
	headsAt map[string]journal.Head // the heads after them
	visit   func(*journal.Event, int)
}

func (ld *loader) visitEvent(e *journal.Event, line int) {
	if ld.visit != nil {
		ld.visit(e, line)
	}
	if ld.heads == nil {
		ld.heads = map[string]journal.Head{}
	}
	ld.events++
	if h, ok := ld.heads[e.Machine]; !ok || e.Seq > h.Seq {
		ld.heads[e.Machine] = journal.Head{Seq: e.Seq, ID: e.ID, Clock: e.Clock, Epoch: e.Epoch}
	}
	if ld.last.Machine == "" || journal.Compare(e, &ld.last) > 0 {
		ld.last = envelope(*e)
	}
	ld.epoch = max(ld.epoch, e.Epoch)
	if ld.events == ld.at {
		ld.headsAt = maps.Clone(ld.heads)
	}
}

// prefixHash hashes the first limit bytes written to it and remembers the
// last of them.
type prefixHash struct {
	h     *digest.Hasher
	limit int64
	last  byte
}

func (p *prefixHash) Write(b []byte) (int, error) {
	if n := p.limit - p.h.Size(); n > 0 {
		b := b[:min(int64(len(b)), n)]
		p.h.Write(b)
		p.last = b[len(b)-1]
	}
	return len(b), nil
}

// check compares the committed prefix with its record.
func (p *prefixHash) check(want journal.Summary, heads map[string]journal.Head) error {
	if heads == nil && want.Events == 0 {
		heads = map[string]journal.Head{}
	}
	switch got := p.h.Digest(); {
	case got != want.Digest:
		return fmt.Errorf("%w: the committed %d bytes hash to %s, the record says %s", ErrCommitted, want.Bytes, got, want.Digest)
	case want.Bytes > 0 && p.last != '\n':
		return fmt.Errorf("%w: the committed prefix does not end with a newline", ErrCommitted)
	case !maps.Equal(heads, want.Heads) && !(len(heads) == 0 && len(want.Heads) == 0):
		return fmt.Errorf("%w: the heads after %d events are not the recorded heads", ErrCommitted, want.Events)
	}
	return nil
}

// create makes an empty journal file durable when there is none.
func (l *Log) create() error {
	if _, err := l.fsys.Stat(l.path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(l.path)
	if err := vfs.MkdirAllDurable(l.fsys, dir, 0o755); err != nil {
		return err
	}
	f, err := l.fsys.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return l.fsys.SyncDir(dir)
}

// recover handles a journal with problems: if the only one is a torn or
// unparsable last line beyond the committed prefix, it moves that line to
// quarantine and returns the length of the good prefix; otherwise it fails
// with every problem and changes nothing.
func (l *Log) recover(probs []journal.Problem, committed int64) (int64, error) {
	info, err := l.f.Stat()
	if err != nil {
		return 0, err
	}
	data := make([]byte, info.Size())
	if _, err := l.f.ReadAt(data, 0); err != nil && err != io.EOF {
		return 0, err
	}
	cut, line, reason := lastLineCut(data, probs)
	if cut < 0 || len(probs) > 1 {
		return 0, &journal.VerifyError{Problems: probs}
	}
	if cut < committed {
		return 0, fmt.Errorf("the committed journal is damaged: %w", &journal.VerifyError{Problems: probs})
	}
	if err := l.quarantine(data[cut:], line, reason); err != nil {
		return 0, err
	}
	return cut, nil
}

// lastLineCut finds whether the only way the journal is broken at its end is
// a torn or unparsable last line, which a crash during an append leaves. It
// returns the offset where that line starts, or -1.
func lastLineCut(data []byte, probs []journal.Problem) (int64, int, string) {
	if len(probs) == 0 {
		return -1, 0, ""
	}
	p := probs[len(probs)-1]
	if p.Code != journal.CodeTorn && p.Code != journal.CodeParse && p.Code != journal.CodeID {
		return -1, 0, ""
	}
	body := bytes.TrimSuffix(data, []byte{'\n'})
	start := bytes.LastIndexByte(body, '\n') + 1
	if p.Line != bytes.Count(data[:start], []byte{'\n'})+1 {
		return -1, 0, "" // the problem is not on the last line
	}
	return int64(start), p.Line, p.Msg
}

// quarantine writes a bad last line to the first free quarantine file, then
// cuts it from the journal. The quarantine file is durable before the cut,
// so a crash in between leaves the line in both places, never in neither.
func (l *Log) quarantine(line []byte, lineNo int, reason string) error {
	qpath, err := l.freeQuarantineName()
	if err != nil {
		return err
	}
	if err := vfs.WriteFile(l.fsys, qpath, line, 0o644); err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	size := int64(0)
	if info, err := l.f.Stat(); err == nil {
		size = info.Size()
	}
	if err := l.f.Truncate(size - int64(len(line))); err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	l.quarant = append(l.quarant, Quarantine{Path: qpath, Line: lineNo, Bytes: int64(len(line)), Reason: reason})
	return nil
}

func (l *Log) freeQuarantineName() (string, error) {
	for n := 1; ; n++ {
		p := fmt.Sprintf("%s%s%d", l.path, QuarantineSuffix, n)
		_, err := l.fsys.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
	}
}

// envelope drops the body and raw line of e, keeping what ordering needs.
func envelope(e journal.Event) journal.Event {
	e.Body, e.Raw = nil, nil
	return e
}

// Quarantined returns what Open moved out of the journal, if anything.
func (l *Log) Quarantined() []Quarantine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Quarantine(nil), l.quarant...)
}

// Stats counts what the log wrote since it was opened.
type Stats struct {
	Events int64 `json:"events"` // events appended or imported
	Syncs  int64 `json:"syncs"`  // write+fsync rounds: Events/Syncs is the mean group-commit batch
}

// Stats returns what the log wrote since it was opened.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Path returns the journal file's path.
func (l *Log) Path() string { return l.path }

// Summary returns the summary of the journal's durable contents.
func (l *Log) Summary() journal.Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state.sum.Summary()
}

// Epoch returns the fence: appends under a lower epoch are refused.
func (l *Log) Epoch() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch
}

// SetEpoch raises the holder epoch; a lower value than the current fence is
// ignored, since epochs never go back.
func (l *Log) SetEpoch(epoch uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.epoch = max(l.epoch, epoch)
}

// Close waits for appends in flight and closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.leading {
		l.cond.Wait()
	}
	if l.closed {
		return nil
	}
	l.closed = true
	return l.f.Close()
}

// Append writes one new event of machine durably and returns it. Seq, prev
// and the Lamport clock are assigned in the order appends reach the disk.
// The call returns only after the event's bytes are synced; concurrent calls
// share one write and one fsync. Body is as for journal.MarshalBody.
func (l *Log) Append(machine string, kind journal.Kind, epoch uint64, wallTime string, body any) (journal.Event, error) {
	raw, err := journal.MarshalBody(kind, body)
	if err != nil {
		return journal.Event{}, fmt.Errorf("append: %w", err)
	}
	r := &request{machine: machine, kind: kind, epoch: epoch, time: wallTime, body: raw}
	l.submit(r)
	if r.err != nil {
		return journal.Event{}, fmt.Errorf("append: %w", r.err)
	}
	return r.event, nil
}

// part is one more event of an AppendAll request.
type part struct {
	kind journal.Kind
	body []byte
}

// AppendAll writes new events of machine under epoch as one unit: they are
// sealed one after the other, with no other appender's event between
// them, in one write and one fsync, and returned once durable. A crash in
// the write can leave a prefix of them (a torn last line is quarantined at
// the next open); nothing else is ever between them.
func (l *Log) AppendAll(machine string, epoch uint64, wallTime string, kinds []journal.Kind, bodies []any) ([]journal.Event, error) {
	if len(kinds) == 0 || len(kinds) != len(bodies) {
		return nil, fmt.Errorf("append: %d kinds for %d bodies", len(kinds), len(bodies))
	}
	var first []byte
	var more []part
	for i := range kinds {
		raw, err := journal.MarshalBody(kinds[i], bodies[i])
		if err != nil {
			return nil, fmt.Errorf("append: event %d: %w", i, err)
		}
		if i == 0 {
			first = raw
		} else {
			more = append(more, part{kinds[i], raw})
		}
	}
	r := &request{machine: machine, kind: kinds[0], epoch: epoch, time: wallTime, body: first, more: more}
	l.submit(r)
	if r.err != nil {
		return nil, fmt.Errorf("append: %w", r.err)
	}
	if r.events == nil { // one event: the batch keeps it in r.event only
		return []journal.Event{r.event}, nil
	}
	return r.events, nil
}

// Import adds events sealed elsewhere (a move's journal tail, a merge) that
// continue their machines' chains. They are not fenced: they were written
// under the epochs they carry. They must sort after the journal's last
// event and verify; otherwise nothing is written. Events already in the
// journal are skipped. It returns how many events it wrote.
func (l *Log) Import(events []journal.Event) (int, error) {
	r := &request{sealed: events}
	l.submit(r)
	if r.err != nil {
		return 0, fmt.Errorf("import: %w", r.err)
	}
	return r.n, nil
}
