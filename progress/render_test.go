package progress

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// last returns the last frame drawn: the text after the final carriage
// return.
func last(out string) string {
	out = strings.TrimRight(out, "\n")
	return out[strings.LastIndex(out, "\r")+1:]
}

var (
	rateRe = regexp.MustCompile(`[0-9.]+ [kMGT]?B/s`)
	etaRe  = regexp.MustCompile(`\[[0-9hms]+:[0-9hms]+\]`)
)

func TestBarShowsBytesRateETA(t *testing.T) {
	var buf bytes.Buffer
	b := newBar(&buf, "export", 2<<20)
	b.Add(1 << 20)
	first := buf.String()
	if !strings.Contains(first, "export") || !strings.Contains(first, "/2.1 MB") || !etaRe.MatchString(first) {
		t.Errorf("frames before the end = %q, want label, bytes of total and an [elapsed:left] ETA", first)
	}
	b.Add(1 << 20)
	b.Finish()
	end := last(buf.String())
	if !strings.Contains(end, "100%") || !strings.Contains(end, "2.1/2.1 MB") || !rateRe.MatchString(end) {
		t.Errorf("final frame = %q, want 100%%, 2.1/2.1 MB and a rate", end)
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
	if end := last(buf.String()); !strings.Contains(end, "4.2/4.2 MB") || !strings.Contains(end, "100%") {
		t.Errorf("final frame after SetTotal = %q, want 4.2/4.2 MB at 100%%", end)
	}
}

func TestBarConcurrentAdds(t *testing.T) {
	var buf syncBuffer
	b := newBar(&buf, "snapshot", 64*1000)
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
	if end := last(buf.String()); !strings.Contains(end, "64/64 kB") {
		t.Errorf("final frame = %q, want 64/64 kB", end)
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
