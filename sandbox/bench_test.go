//go:build linux

package sandbox

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkStart measures one sandboxed `true` per iteration, per kind,
// against a bare fork/exec of the same command (bench/sandbox.sh runs the
// same with the capsule binary as the init and prints the ratio).
func BenchmarkStart(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, kind := range []string{KindBwrap, KindLandlock} {
		b.Run(kind, func(b *testing.B) {
			s, err := probe("", kind)
			if err != nil || s.Kind() != kind {
				b.Fatalf("no %s sandbox: %v %s", kind, err, s.Reason())
			}
			defer s.Close()
			p := Policy{Workspace: b.TempDir(), Limits: Limits{Wall: 10e9, Processes: 64, MemoryMB: 256, DiskMB: 64}}
			for b.Loop() {
				cmd, err := s.Command(context.Background(), p, []string{"true"})
				if err != nil {
					b.Fatal(err)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				s.Release(cmd)
			}
		})
	}
}
