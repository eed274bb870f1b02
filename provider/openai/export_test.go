package openai

import (
	"context"
	"time"
)

// SetSleep replaces the wait between attempts, for tests that check the
// waits without taking them.
func SetSleep(c *Client, f func(context.Context, time.Duration) error) { c.sleep = f }

// StreamBody exposes streamBody to the package's tests.
var StreamBody = streamBody
