package node

import "time"

// Clock is the node's view of time. Tests inject a fake; no safety decision
// depends on it (epochs are compared, never timed): it paces the runner,
// retries and timeouts, and measures the frozen window.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
