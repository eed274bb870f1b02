package main

import (
	"os"
	"testing"
)

// runAsCLI, set in the environment, makes the test binary run as the
// capsule command itself: tests that need a real process (signals, the
// README walkthrough's background node) run os.Args[0] with it.
const runAsCLI = "CAPSULE_TEST_AS_CLI"

func TestMain(m *testing.M) {
	sandboxInit() // the sandbox re-executes this binary for tools' commands
	if os.Getenv(runAsCLI) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}
