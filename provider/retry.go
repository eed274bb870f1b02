package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentcapsule/capsule/render"
)

// Do runs try until it succeeds, fails for good, or the retries r allows
// are spent, and returns the number of attempts made. An attempt is
// retried when it fails with an *Error whose Status is retryable (408, 429,
// 5xx) or 0 (the connection dropped), unless ctx is done. The wait is the
// provider's Retry-After when it sent one (a Retry-After above
// r.MaxRetryAfter ends the call instead: waiting that long is the caller's
// decision), else a doubling backoff from r.Base capped at r.Max. sleep
// waits (nil: a timer that honours ctx); tests pass their own.
func Do(ctx context.Context, r Retry, sleep func(context.Context, time.Duration) error, try func(attempt int) error) (int, error) {
	r = r.OrDefault()
	if sleep == nil {
		sleep = Sleep
	}
	wait := r.Base
	for attempt := 1; ; attempt++ {
		err := try(attempt)
		if err == nil {
			return attempt, nil
		}
		var pe *Error
		if !errors.As(err, &pe) || ctx.Err() != nil || attempt >= r.Attempts {
			return attempt, err
		}
		if pe.Status != 0 && !Retryable(pe.Status) {
			return attempt, err
		}
		d := wait
		if pe.RetryAfter > 0 {
			if pe.RetryAfter > r.MaxRetryAfter {
				return attempt, err
			}
			d = pe.RetryAfter
		}
		if err := sleep(ctx, d); err != nil {
			return attempt, err
		}
		if wait *= 2; wait > r.Max {
			wait = r.Max
		}
	}
}

// Sleep waits d or until ctx is done.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RetryAfter reads a Retry-After header (delay-seconds or an HTTP date,
// RFC 9110 §10.2.3) and the retry-after-ms header some providers send; it
// returns 0 when neither is there or readable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if ms := strings.TrimSpace(h.Get("Retry-After-Ms")); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v > 0 {
			return time.Duration(v * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Drain reads what is left of a response body whose answer was read
// whole (at most 64 KiB: the tail of a stream after its last event), so
// that the transport can reuse the connection when the body is closed; a
// body closed before its end makes the transport drop the connection.
// Call it only after a complete answer: a stream cut short is closed as
// it is.
func Drain(body io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
}

// TransportError is the *Error of a request that got no answer: the
// operation's own failure, without the URL net/http's error repeats.
func TransportError(providerName string, api render.API, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &Error{Provider: providerName, API: api, Err: err}
}

// Finish is the error a client's Call returns after Do: the context's
// error when the call was cancelled or timed out (prefixed with the
// client's name), else err with the number of attempts made.
func Finish(ctx context.Context, client string, err error, attempts int) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: call: %w", client, ctx.Err())
	}
	var pe *Error
	if errors.As(err, &pe) {
		pe.Attempts = attempts
	}
	return err
}
