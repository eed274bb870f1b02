// Package progress draws progress bars on a terminal for the long commands
// (export, import, snapshot, checkout, verify) and stays silent otherwise,
// so scripts and logs never see control characters. Only cmd/capsule and the
// packages it drives for those commands import it.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// throttle is the shortest interval between two redraws.
const throttle = 100 * time.Millisecond

// tick is how often a bar in its closing phase redraws, so its elapsed
// time keeps counting.
const tick = 250 * time.Millisecond

// DefaultClosing is the closing phase's label of a bar that was given none.
const DefaultClosing = "finishing"

// Bar is a byte progress bar showing bytes done, total, rate and ETA, in
// binary units (KiB, MiB, GiB) like every summary of the CLI. When the
// count reaches a known total before Finish, the work left is making it
// durable: the bar says so (Closing sets the words) and keeps its elapsed
// time running, rather than sitting at 100 % in silence. A Bar that is not
// drawn (quiet, or not a terminal) and a nil *Bar accept every call and do
// nothing. A Bar is safe for concurrent use.
type Bar struct {
	w     io.Writer
	pb    *progressbar.ProgressBar // nil for a bar that draws nothing
	label string

	mu         sync.Mutex
	n          int64 // bytes counted so far
	total      int64 // <= 0: unknown
	closing    string
	closed     chan struct{} // closed by Finish once the closing phase ticks
	closeStart time.Time
	finished   bool
}

// New returns a bar that writes to w only if w is a terminal (an *os.File for
// which golang.org/x/term.IsTerminal is true) and quiet is false; otherwise a
// no-op bar. A total below zero means the size is unknown: the bar then
// shows a spinner with bytes and rate but no ETA.
func New(w io.Writer, label string, total int64, quiet bool) *Bar {
	if quiet || !isTerminal(w) {
		return &Bar{}
	}
	return newBar(w, label, total)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// newBar returns a bar that draws on w, terminal or not.
func newBar(w io.Writer, label string, total int64) *Bar {
	b := &Bar{w: w, total: total, label: label, closing: DefaultClosing}
	b.pb = progressbar.NewOptions64(pbMax(total),
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(label),
		progressbar.OptionShowBytes(true),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetRenderBlankState(true), // starts the clock, so the first rate is sane
		progressbar.OptionSetWidth(20),
		progressbar.OptionThrottle(throttle),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)
	return b
}

// pbMax maps a total to progressbar's max, where -1 means unknown and 0 is
// not allowed.
func pbMax(total int64) int64 {
	if total <= 0 {
		return -1
	}
	return total
}

func (b *Bar) drawn() bool { return b != nil && b.pb != nil }

// Add counts n more bytes done.
func (b *Bar) Add(n int64) {
	if !b.drawn() || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.n += n
	_ = b.pb.Add64(n) // errors only report a count past the total; the bar then stays full
	if b.total > 0 && b.n >= b.total && b.closed == nil {
		b.startClosing()
	}
}

// Closing sets the words shown once the count reaches the total, for the
// phase that follows (e.g. "storing new blobs and syncing them").
func (b *Bar) Closing(what string) {
	if !b.drawn() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closing = what
}

// startClosing enters the closing phase: the full bar has ended its line,
// and a status line below it counts the seconds until Finish. Caller
// holds b.mu.
func (b *Bar) startClosing() {
	b.closed = make(chan struct{})
	b.closeStart = time.Now()
	b.drawClosing("")
	go b.tickClosing(b.closed)
}

// drawClosing redraws the status line of the closing phase; end, if not
// empty, ends it. Caller holds b.mu.
func (b *Bar) drawClosing(end string) {
	secs := time.Since(b.closeStart).Seconds()
	fmt.Fprintf(b.w, "\r\033[K%s: %s... %.0fs%s", b.label, b.closing, secs, end)
}

func (b *Bar) tickClosing(done <-chan struct{}) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			b.mu.Lock()
			if !b.finished {
				b.drawClosing("")
			}
			b.mu.Unlock()
		}
	}
}

// SetTotal changes the total, for a size learned late; below zero means
// unknown.
func (b *Bar) SetTotal(total int64) {
	if !b.drawn() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	wasUnknown := b.total <= 0
	b.total = total
	b.pb.ChangeMax64(pbMax(total))
	if wasUnknown && total > 0 {
		// The spinner counted modulo its width; start the count afresh.
		b.pb.Reset()
		_ = b.pb.Add64(b.n)
	}
}

// Describe changes the label shown before the bar.
func (b *Bar) Describe(label string) {
	if !b.drawn() {
		return
	}
	b.pb.Describe(label)
}

// Finish ends the bar and its line. If the total is known and was not
// reached (the work stopped early) the bar keeps its last state instead of
// claiming completion. Later calls do nothing.
func (b *Bar) Finish() {
	if !b.drawn() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	if b.closed != nil { // the bar itself completed when the count reached the total
		close(b.closed)
		b.drawClosing(", done\n")
		return
	}
	if b.total > 0 && b.n < b.total {
		_ = b.pb.Exit()
		return
	}
	_ = b.pb.Finish()
}

// Reader returns r counting every byte read from it.
func (b *Bar) Reader(r io.Reader) io.Reader {
	if !b.drawn() {
		return r
	}
	return &reader{r: r, b: b}
}

// Writer returns w counting every byte written to it.
func (b *Bar) Writer(w io.Writer) io.Writer {
	if !b.drawn() {
		return w
	}
	return &writer{w: w, b: b}
}

type reader struct {
	r io.Reader
	b *Bar
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.b.Add(int64(n))
	return n, err
}

type writer struct {
	w io.Writer
	b *Bar
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.b.Add(int64(n))
	return n, err
}
