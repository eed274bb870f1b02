package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var (
	flagSeed   = flag.Int64("e2e.seed", 0, "seed of the fault schedule (0: a fresh one, printed)")
	flagRounds = flag.Int("e2e.rounds", 20, "moves with faults in the chaos test")
	flagKeep   = flag.Bool("e2e.keep", false, "keep the nodes' data folders and logs, and print where")
)

// capsuleBin is the binary built once for the whole package.
var capsuleBin string

// TestMain builds the capsule binary once into a temporary folder, runs
// the tests, and removes it.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "capsule-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	capsuleBin = filepath.Join(dir, "capsule")
	if err := build(capsuleBin); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building capsule:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func build(out string) error {
	// go test puts its own GOROOT/bin first on the PATH of test binaries.
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	cmd := exec.Command(goBin, "build", "-o", out, "github.com/agentcapsule/capsule/cmd/capsule")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
