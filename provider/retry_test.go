package provider

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestDoRetriesWhatMayBeRetried(t *testing.T) {
	r := Retry{Attempts: 4, Base: time.Second, Max: 3 * time.Second, MaxRetryAfter: 10 * time.Second}
	cases := []struct {
		name     string
		errs     []error
		attempts int
		waits    []time.Duration
		ok       bool
	}{
		{"429 with retry-after then ok", []error{&Error{Status: 429, RetryAfter: 7 * time.Second}}, 2, []time.Duration{7 * time.Second}, true},
		{"5xx backs off doubling capped", []error{&Error{Status: 500}, &Error{Status: 503}, &Error{Status: 502}}, 4, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, true},
		{"dropped connection", []error{&Error{Err: errors.New("EOF")}}, 2, []time.Duration{time.Second}, true},
		{"400 is not retried", []error{&Error{Status: 400}}, 1, nil, false},
		{"retry-after above the bound ends the call", []error{&Error{Status: 429, RetryAfter: time.Minute}}, 1, nil, false},
		{"attempts are bounded", []error{&Error{Status: 500}, &Error{Status: 500}, &Error{Status: 500}, &Error{Status: 500}, &Error{Status: 500}}, 4, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, false},
		{"other errors are not retried", []error{errors.New("bad body")}, 1, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var waits []time.Duration
			sleep := func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			n, err := Do(context.Background(), r, sleep, func(attempt int) error {
				if attempt <= len(c.errs) {
					return c.errs[attempt-1]
				}
				return nil
			})
			if n != c.attempts || (err == nil) != c.ok {
				t.Fatalf("attempts %d err %v, want %d ok=%v", n, err, c.attempts, c.ok)
			}
			if len(waits) != len(c.waits) {
				t.Fatalf("waits %v, want %v", waits, c.waits)
			}
			for i := range waits {
				if waits[i] != c.waits[i] {
					t.Fatalf("waits %v, want %v", waits, c.waits)
				}
			}
		})
	}
}

func TestDoStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n, err := Do(ctx, Retry{}, func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }, func(int) error { return &Error{Status: 503} })
	if n != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("attempts %d err %v, want 1 and context.Canceled", n, err)
	}
}

func TestErrorClasses(t *testing.T) {
	if !errors.Is(&Error{Status: 400}, ErrRefused) || !errors.Is(&Error{Status: 401}, ErrRefused) {
		t.Fatal("4xx is not ErrRefused")
	}
	for _, s := range []int{0, 408, 429, 500, 529} {
		if e := (&Error{Status: s}); errors.Is(e, ErrRefused) || !errors.Is(e, ErrUnavailable) {
			t.Fatalf("status %d: refused=%v", s, errors.Is(e, ErrRefused))
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("Retry-After", "12")
	if d := RetryAfter(h, now); d != 12*time.Second {
		t.Fatalf("seconds: %v", d)
	}
	h.Set("Retry-After", now.Add(30*time.Second).Format(http.TimeFormat))
	if d := RetryAfter(h, now); d != 30*time.Second {
		t.Fatalf("date: %v", d)
	}
	h.Set("Retry-After-Ms", "250")
	if d := RetryAfter(h, now); d != 250*time.Millisecond {
		t.Fatalf("ms: %v", d)
	}
	if d := RetryAfter(http.Header{"Retry-After": {"soon"}}, now); d != 0 {
		t.Fatalf("junk: %v", d)
	}
}
