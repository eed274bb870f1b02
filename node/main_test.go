package node

import (
	"os"
	"testing"

	"github.com/agentcapsule/capsule/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init: the sandbox
// re-executes it (sandbox.Verb) for the commands tools start.
func TestMain(m *testing.M) {
	if code := sandbox.Main(os.Args[1:]); code >= 0 {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
