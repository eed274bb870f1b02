package sandbox

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as the sandbox's init: Command
// re-executes it with Verb.
func TestMain(m *testing.M) {
	if code := Main(os.Args[1:]); code >= 0 {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
