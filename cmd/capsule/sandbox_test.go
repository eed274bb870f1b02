package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/sandbox"
)

// The capsule binary serves as the sandbox's init: main hands the hidden
// verb to sandbox.Main before cobra sees it. The test builds the binary
// and runs a command through the capsule init (Landlock, and bwrap with an
// output limit: the paths that re-execute it).
func TestSandboxInit(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "capsule")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, kind := range []string{sandbox.KindLandlock, sandbox.KindBwrap} {
		t.Run(kind, func(t *testing.T) {
			t.Setenv(sandbox.ForceEnv, kind)
			sb, err := sandbox.Probe(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			if sb.Kind() != kind {
				t.Fatalf("no %s sandbox with the capsule binary as init: %s", kind, sb.Reason())
			}
			ws := t.TempDir()
			// A memory limit too: the capsule binary's own goroutines may
			// map memory at any time, so the init must not lower RLIMIT_AS
			// under itself (it did, and crashed now and then).
			p := sandbox.Policy{Workspace: ws, Limits: sandbox.Limits{OutputBytes: 1 << 20, MemoryMB: 256, Processes: 32}}
			for i := range 10 {
				cmd, err := sb.Command(context.Background(), p, []string{"/bin/sh", "-c", "pwd; cat /etc/hostname >/dev/null; echo done"})
				if err != nil {
					t.Fatal(err)
				}
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Run(); err != nil || out.String() != ws+"\ndone\n" {
					t.Fatalf("run %d: %v, stdout %q, stderr %.300q", i, err, out.String(), errb.String())
				}
				if strings.Contains(errb.String(), "Usage") {
					t.Fatalf("cobra saw the hidden verb: %s", errb.String())
				}
			}
		})
	}
}
