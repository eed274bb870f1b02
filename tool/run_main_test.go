package tool

import (
	"os"
	"testing"

	"github.com/agentcapsule/capsule/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init, which the run
// tool's commands re-execute.
func TestMain(m *testing.M) {
	if code := sandbox.Main(os.Args[1:]); code >= 0 {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
