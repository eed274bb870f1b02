package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
)

// ErrTorn marks a final line without its newline: an append that a crash
// interrupted. The file-backed log moves such a line to a quarantine file.
var ErrTorn = errors.New("journal: incomplete last line")

// LineError locates an error in a journal file.
type LineError struct {
	Line int // from 1
	Err  error
}

// Error prefixes the line number.
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the error at the line.
func (e *LineError) Unwrap() error { return e.Err }

// Decode reads a whole journal (one event per line, each line ending in a
// newline) and returns its events in file order. The first line that does
// not parse stops it with a *LineError. It does not verify chains or order;
// Verify does. Events alias buffers Decode allocated, never r's.
func Decode(r io.Reader) ([]Event, error) {
	var events []Event
	var first error
	err := stream(r, streamConfig{strict: true}, func(b *batch) {
		if first == nil && len(b.fails) > 0 {
			first = b.fails[0].err
		}
		if first == nil {
			events = append(events, b.events...)
		}
	})
	if err != nil {
		return nil, err
	}
	if first != nil {
		return nil, first
	}
	return events, nil
}

// Check reads a whole journal and verifies it as Verify does, parsing and
// hashing on every core. Lines that do not parse are reported and left out
// of the events it returns. The error is only for a failing reader; a
// journal that verifies has no problems.
func Check(r io.Reader) ([]Event, []Problem, error) {
	var events []Event
	probs, err := scan(r, nil, 0, func(e *Event, _ int) { events = append(events, *e) }, false)
	return events, probs, err
}

// Scan is Check without keeping the events: it verifies a journal of any
// size in bounded memory, calling visit (if not nil) with each event that
// parsed, in file order, with its line number. The event's Body and Raw
// alias a buffer that is reused once visit returns: visit may keep the
// event's other fields, but must copy Body or Raw to keep them.
func Scan(r io.Reader, visit func(e *Event, line int)) ([]Problem, error) {
	return scan(r, nil, 0, visit, true)
}

// VerifyTail checks the part of a journal after a committed prefix whose
// summary is committed (the manifest's record): it continues every chain
// from the committed heads and the total order from the newest committed
// event, numbering lines after the committed ones. The prefix itself is
// checked by its digest, not here.
func VerifyTail(committed Summary, tail io.Reader) ([]Problem, error) {
	return scan(tail, committed.Heads, int(committed.Events), nil, true)
}

// ScanText is Scan with a step that writes text for each event on the
// parsing goroutines: format (safe for concurrent use) appends the text of
// an event that parsed to dst and returns it, and visit receives each event
// with its text, in file order. The text lives in a buffer of the batch,
// reused once visit returns, so formatting a journal of any length
// allocates nothing per event; visit must copy the text to keep it.
func ScanText(r io.Reader, format func(dst []byte, e *Event) []byte, visit func(e *Event, line int, text []byte)) ([]Problem, error) {
	return scanConfig(r, nil, 0, streamConfig{recycle: true, prep: textAll(format)}, func(b *batch, i int) {
		t := b.extra.(*texts)
		visit(&b.events[i], b.lines[i], t.buf[t.ends[i]:t.ends[i+1]])
	})
}

// texts is the text ScanText formats for a batch: event i's is
// buf[ends[i]:ends[i+1]].
type texts struct {
	buf  []byte
	ends []int
}

// textAll formats every event of a batch into its texts, reusing the
// buffers of a recycled batch.
func textAll(format func(dst []byte, e *Event) []byte) func(*batch) {
	return func(b *batch) {
		t, _ := b.extra.(*texts)
		if t == nil {
			t = &texts{}
			b.extra = t
		}
		t.buf, t.ends = t.buf[:0], append(t.ends[:0], 0)
		for i := range b.events {
			t.buf = format(t.buf, &b.events[i])
			t.ends = append(t.ends, len(t.buf))
		}
	}
}

// prepAll applies prep to every event of a batch, keeping the values in
// the batch (reusing their slice when the batch is recycled).
func prepAll[T any](prep func(e *Event) T) func(*batch) {
	return func(b *batch) {
		vs, _ := b.extra.([]T)
		vs = vs[:0]
		for i := range b.events {
			vs = append(vs, prep(&b.events[i]))
		}
		b.extra = vs
	}
}

func scan(r io.Reader, heads map[string]Head, offset int, visit func(*Event, int), recycle bool) ([]Problem, error) {
	var each func(b *batch, i int)
	if visit != nil {
		each = func(b *batch, i int) { visit(&b.events[i], b.lines[i]) }
	}
	return scanConfig(r, heads, offset, streamConfig{offset: offset, recycle: recycle}, each)
}

func scanConfig(r io.Reader, heads map[string]Head, offset int, cfg streamConfig, visit func(*batch, int)) ([]Problem, error) {
	cfg.offset = offset
	c := newChecker()
	c.startAfter(heads)
	var fails []Problem
	err := stream(r, cfg, func(b *batch) {
		for _, f := range b.fails {
			fails = append(fails, f.problem)
		}
		for i := range b.events {
			c.add(&b.events[i], b.lines[i])
			if visit != nil {
				visit(b, i)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return mergeProblems(fails, c.probs), nil
}

// failure is a line that did not parse.
type failure struct {
	problem Problem
	err     error // a *LineError
}

// batch is a run of whole lines parsed by one worker.
type batch struct {
	buf       []byte // the buffer data starts, to recycle
	lineCount int    // newlines in data
	data      []byte
	first     int
	offset    int64   // where data starts in the stream (exact up to the first overlong line)
	bodies    []int64 // where the body of each event starts in the stream
	torn      bool    // the last line has no newline
	long      []int   // lines that were too long, replaced by a placeholder
	events    []Event
	lines     []int // the line of each event
	fails     []failure
	extra     any     // what streamConfig.prep derived from the events
	owners    []int32 // scratch of parse: the event each patch belongs to
	patches   []patch
	done      chan struct{}
}

// stream parses r on every core and hands each batch to visit in file
// order, on the caller's goroutine. A few batches are in flight at a time,
// so memory stays bounded whatever the journal's size. With strict set,
// workers stop a batch at its first failure. With recycle set, a batch's
// buffers are reused once visit returns.
// streamConfig says how stream reads: offset is the number of lines
// before r's first; strict and recycle are as for stream; prep, if set,
// runs on the parsing goroutine after each batch is parsed; once stop is
// set, no more of r is read.
type streamConfig struct {
	offset          int
	strict, recycle bool
	prep            func(*batch)
	stop            *atomic.Bool
}

func stream(r io.Reader, cfg streamConfig, visit func(*batch)) error {
	offset, strict, recycle := cfg.offset, cfg.strict, cfg.recycle
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *batch, workers)
	order := make(chan *batch, 2*workers)
	free := make(chan *batch, 4*workers)
	var readErr error
	go func() {
		defer close(order)
		defer close(jobs)
		lr := lineReader{r: r, line: offset + 1, free: free}
		for cfg.stop == nil || !cfg.stop.Load() {
			b, err := lr.next()
			if err != nil || b == nil {
				readErr = err
				return
			}
			b.done = make(chan struct{})
			order <- b
			jobs <- b
		}
	}()
	for w := 0; w < workers; w++ {
		go func() {
			for b := range jobs {
				b.parse(strict)
				if cfg.prep != nil {
					cfg.prep(b)
				}
				close(b.done)
			}
		}()
	}
	for b := range order {
		<-b.done
		visit(b)
		if recycle {
			select {
			case free <- b:
			default:
			}
		}
	}
	return readErr
}

func (b *batch) parse(strict bool) {
	data, line := b.data, b.first
	in := newInterner(true, b.lineCount+1)
	owners, patches := b.owners[:0], b.patches[:0]
	defer func() {
		in.finish(b.events, owners, patches)
		b.owners, b.patches = owners, patches // reused by a recycled batch
	}()
	n := b.lineCount + 1
	if cap(b.events) < n {
		b.events, b.lines, b.bodies = make([]Event, 0, n), make([]int, 0, n), make([]int64, 0, n)
	}
	b.events, b.lines, b.bodies, b.fails = b.events[:0], b.lines[:0], b.bodies[:0], nil
	for len(data) > 0 {
		at := b.offset + int64(len(b.data)-len(data))
		i := bytes.IndexByte(data, '\n')
		text := data
		if i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(b.long) > 0 && b.long[0] == line {
			b.long = b.long[1:]
			b.fail(line, nil, fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, MaxLine))
		} else if i < 0 && b.torn {
			b.fail(line, text, ErrTorn)
		} else if e, err := parseText(text, in); err != nil {
			b.fail(line, text, err)
		} else {
			for _, p := range in.take() {
				owners, patches = append(owners, int32(len(b.events))), append(patches, p)
			}
			b.events = append(b.events, e)
			b.lines = append(b.lines, line)
			// Body aliases text, so their capacities tell where it starts.
			b.bodies = append(b.bodies, at+int64(cap(text)-cap(e.Body)))
		}
		in.take() // a failed line's patches
		if strict && len(b.fails) > 0 {
			return
		}
		line++
	}
}

func parseText(text []byte, in *interner) (Event, error) {
	if len(text) == 0 {
		return Event{}, fmt.Errorf("%w: empty line", ErrSyntax)
	}
	return parseOwned(text, in)
}

func (b *batch) fail(line int, text []byte, err error) {
	b.fails = append(b.fails, newFailure(line, text, err))
}

func newFailure(line int, text []byte, err error) failure {
	code := CodeParse
	switch {
	case errors.Is(err, ErrTorn):
		code = CodeTorn
	case errors.Is(err, ErrID):
		code = CodeID
	}
	return failure{
		problem: Problem{Line: line, Machine: guessMachine(text), Code: code, Msg: err.Error()},
		err:     &LineError{Line: line, Err: err},
	}
}

// guessMachine finds the machine of a line that failed to parse, if the
// line is JSON enough to say.
func guessMachine(text []byte) string {
	var v struct {
		Machine string `json:"machine"`
	}
	if len(text) > MaxLine || json.Unmarshal(text, &v) != nil || checkMachine(v.Machine) != nil {
		return ""
	}
	return v.Machine
}

// lineReader cuts a stream into batches of whole lines, each in a buffer of
// its own, so events may alias it. An overlong line is replaced by a one-byte
// placeholder as it streams by, and reported by the worker that meets it.
type lineReader struct {
	r      io.Reader
	buf    []byte
	line   int   // number of the first line in buf
	offset int64 // where buf starts in the stream
	skip   bool  // discarding the rest of an overlong line
	skipAt int   // where in buf the overlong line's placeholder ends
	long   []int // numbers of overlong lines not yet handed to a batch
	eof    bool
	free   chan *batch // batches whose buffers may be reused
	spare  []byte      // the buffer of the last recycled batch
}

const batchSize = 256 << 10

// next returns the next batch, or nil at the end.
func (lr *lineReader) next() (*batch, error) {
	for {
		if b := lr.cut(); b != nil {
			return b, nil
		}
		if lr.eof {
			return nil, nil
		}
		if err := lr.fill(); err != nil {
			return nil, err
		}
	}
}

// cut takes the whole lines out of buf once there are enough of them, or
// everything at the end of the stream.
func (lr *lineReader) cut() *batch {
	i := bytes.LastIndexByte(lr.buf, '\n')
	switch {
	case lr.eof && len(lr.buf) > 0 && i < len(lr.buf)-1:
		return lr.take(len(lr.buf), true)
	case i >= 0 && (lr.eof || len(lr.buf) >= batchSize):
		return lr.take(i+1, false)
	}
	return nil
}

func (lr *lineReader) take(n int, torn bool) *batch {
	b := lr.newBatch()
	b.buf, b.data, b.first, b.torn, b.long = lr.buf, lr.buf[:n:n], lr.line, torn, nil
	b.offset, lr.offset = lr.offset, lr.offset+int64(n)
	b.lineCount = bytes.Count(b.data, []byte{'\n'})
	lr.line += b.lineCount
	for len(lr.long) > 0 && (lr.long[0] < lr.line || torn) {
		b.long = append(b.long, lr.long[0])
		lr.long = lr.long[1:]
	}
	rest := lr.buf[n:]
	lr.buf = append(lr.newBuffer(lr.size(max(batchSize+batchSize/4, 2*len(rest)), len(rest))), rest...)
	lr.skipAt -= n
	return b
}

// newBatch reuses a batch a Scan is done with, or makes one.
func (lr *lineReader) newBatch() *batch {
	select {
	case b := <-lr.free:
		lr.spare = b.buf
		return &batch{events: b.events, lines: b.lines, bodies: b.bodies, extra: b.extra, owners: b.owners, patches: b.patches}
	default:
		return &batch{}
	}
}

// newBuffer returns an empty buffer of at least n bytes, reusing the
// buffer of a recycled batch when it is large enough.
func (lr *lineReader) newBuffer(n int) []byte {
	if b := lr.spare; cap(b) >= n {
		lr.spare = nil
		return b[:0]
	}
	return make([]byte, 0, n)
}

// size is how large a buffer holding held bytes and the rest of the
// stream needs to be, at most want: a reader that tells how much is left
// (a bytes.Reader) gets a buffer just large enough, because events alias
// their batch's buffer and a few lines decoded must not pin 256 KiB each
// (the node decodes each step's new events so).
func (lr *lineReader) size(want, held int) int {
	if l, ok := lr.r.(interface{ Len() int }); ok {
		return min(want, held+l.Len()+1)
	}
	return want
}

// fill reads more of the stream.
func (lr *lineReader) fill() error {
	if free := cap(lr.buf) - len(lr.buf); free < lr.size(batchSize/4, 0) {
		lr.buf = append(make([]byte, 0, lr.size(2*cap(lr.buf)+batchSize, len(lr.buf))), lr.buf...)
	}
	n, err := lr.r.Read(lr.buf[len(lr.buf):cap(lr.buf)])
	lr.buf = lr.buf[:len(lr.buf)+n]
	if lr.skip {
		lr.discard()
	} else {
		lr.checkLong()
	}
	switch {
	case err == io.EOF:
		lr.eof = true
	case err != nil:
		return fmt.Errorf("read journal: %w", err)
	}
	return nil
}

// checkLong replaces the unfinished last line by a placeholder once it is
// longer than MaxLine, and starts discarding the rest of it.
func (lr *lineReader) checkLong() {
	start := bytes.LastIndexByte(lr.buf, '\n') + 1
	if len(lr.buf)-start <= MaxLine {
		return
	}
	lr.long = append(lr.long, lr.line+bytes.Count(lr.buf[:start], []byte{'\n'}))
	lr.buf = append(lr.buf[:start], 0)
	lr.skip, lr.skipAt = true, start+1
	lr.discard()
}

// discard drops the bytes of an overlong line, up to its newline.
func (lr *lineReader) discard() {
	j := bytes.IndexByte(lr.buf[lr.skipAt:], '\n')
	if j < 0 {
		lr.buf = lr.buf[:lr.skipAt]
		return
	}
	lr.buf = append(lr.buf[:lr.skipAt], lr.buf[lr.skipAt+j:]...)
	lr.skip = false
	lr.checkLong()
}
