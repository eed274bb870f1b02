package progress

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// last returns the last frame drawn: the text after the final carriage
// return.
func last(out string) string {
	out = strings.TrimRight(out, "\n")
	return out[strings.LastIndex(out, "\r")+1:]
}

// lastBar returns the last frame of the bar itself, before any closing
// phase's status line.
func lastBar(out string) string {
	if i := strings.Index(out, "\r\033[K"); i >= 0 {
		out = out[:i]
	}
	return last(out)
}

// decimalRe matches sizes in decimal units, which the bars must not use.
var decimalRe = regexp.MustCompile(`[0-9] ?[kMGT]B\b`)

var (
	rateRe = regexp.MustCompile(`[0-9.]+ [KMGT]?i?B/s`)
	etaRe  = regexp.MustCompile(`\[[0-9hms]+:[0-9hms]+\]`)
)

func TestBarShowsBytesRateETA(t *testing.T) {
	var buf bytes.Buffer
	b := newBar(&buf, "export", 2<<20)
	b.Add(1 << 20)
	first := buf.String()
	if !strings.Contains(first, "export") || !strings.Contains(first, "/2.0 MiB") || !etaRe.MatchString(first) {
		t.Errorf("frames before the end = %q, want label, bytes of total and an [elapsed:left] ETA", first)
	}
	b.Add(1 << 20)
	b.Finish()
	end := lastBar(buf.String())
	if !strings.Contains(end, "100%") || !strings.Contains(end, "2.0/2.0 MiB") || !rateRe.MatchString(end) {
		t.Errorf("final frame = %q, want 100%%, 2.0/2.0 MiB and a rate", end)
	}
	if decimalRe.MatchString(buf.String()) {
		t.Errorf("the bar uses decimal units: %q", buf.String())
	}
	if !strings.HasSuffix(buf.String(), "\n") {
		t.Errorf("Finish must end the line: %q", buf.String())
	}
}

func TestBarFinishEarlyKeepsState(t *testing.T) {
	var buf bytes.Buffer
	b := newBar(&buf, "verify", 10<<20)
	b.Add(1 << 20)
	b.Finish()
	if strings.Contains(buf.String(), "100%") {
		t.Errorf("a bar finished at 10%% claims completion: %q", buf.String())
	}
	if !strings.HasSuffix(buf.String(), "\n") {
		t.Errorf("Finish must end the line: %q", buf.String())
	}
}

func TestBarUnknownTotal(t *testing.T) {
	var buf bytes.Buffer
	b := newBar(&buf, "import", -1)
	b.Add(3 << 20)
	b.SetTotal(4 << 20)
	b.Add(1 << 20)
	b.Finish()
	if end := lastBar(buf.String()); !strings.Contains(end, "4.0/4.0 MiB") || !strings.Contains(end, "100%") {
		t.Errorf("final frame after SetTotal = %q, want 4.0/4.0 MiB at 100%%", end)
	}
}

func TestBarConcurrentAdds(t *testing.T) {
	var buf syncBuffer
	b := newBar(&buf, "snapshot", 8*1000*8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				b.Add(8)
			}
		}()
	}
	wg.Wait()
	b.Finish()
	if end := lastBar(buf.String()); !strings.Contains(end, "62/62 KiB") { // 64,000 bytes
		t.Errorf("final frame = %q, want 62/62 KiB", end)
	}
}

// TestBarClosingPhase: between the count reaching its total and Finish the
// bar says what it is doing and counts the seconds, then ends the line.
func TestBarClosingPhase(t *testing.T) {
	var buf syncBuffer
	b := newBar(&buf, "snapshot", 1<<20)
	b.Closing("storing new blobs and syncing them")
	b.Add(1 << 20)
	time.Sleep(3 * tick)
	during := last(buf.String())
	if !strings.Contains(during, "snapshot: storing new blobs and syncing them... ") {
		t.Errorf("at 100%% before Finish the bar shows %q, want the closing phase", during)
	}
	frames := strings.Count(buf.String(), "storing new blobs")
	b.Finish()
	if frames < 2 {
		t.Errorf("the closing phase was drawn %d times in %v, want it to keep ticking", frames, 3*tick)
	}
	if out := buf.String(); !strings.HasSuffix(out, ", done\n") {
		t.Errorf("Finish after the closing phase = %q, want it to end with \", done\\n\"", out)
	}
}

// syncBuffer is a bytes.Buffer safe for the bar's spinner goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
