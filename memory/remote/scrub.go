package remote

import (
	"context"
	"errors"
	"strings"

	"github.com/agentcapsule/capsule/provider"
)

// redacted replaces the key wherever a provider's text quotes it.
const redacted = "[redacted key]"

// redact removes key from s.
func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, redacted)
}

// scrubbed is an error whose text quoted the key: the text without it,
// and the kinds errors.Is finds, not the original error (whose text
// still holds the key).
type scrubbed struct {
	msg   string
	kinds []error
}

func (s *scrubbed) Error() string { return s.msg }

func (s *scrubbed) Unwrap() []error { return s.kinds }

// scrub returns err, or when its text holds the key, a scrubbed copy.
// The backends already redact the provider's messages; this is the last
// guard, for text they did not write.
func (e *embedder) scrub(err error) error {
	if err == nil || e.key == "" || !strings.Contains(err.Error(), e.key) {
		return err
	}
	s := &scrubbed{msg: redact(err.Error(), e.key)}
	for _, k := range []error{provider.ErrRefused, provider.ErrUnavailable, ErrMalformed, ErrConfig, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, k) {
			s.kinds = append(s.kinds, k)
		}
	}
	return s
}
