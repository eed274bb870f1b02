// Command sandboxbench times N runs of `true` through sandbox.Command (one
// kind, with the capsule binary as the init) or a bare fork/exec of it, and
// prints the median and 90th percentile per call, the peak RSS of a call's
// processes (wait4's rusage: the call's process and what it waited for)
// and the CPU time per call. bench/sandbox.sh runs it, interleaving modes.
//
// Usage: sandboxbench -mode bare|bwrap-cli|bwrap|bwrap-init|landlock -init CAPSULE -n N
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/agentcapsule/capsule/sandbox"
)

func main() {
	mode := flag.String("mode", "bare", "bare, bwrap-cli (bwrap alone), bwrap, bwrap-init (bwrap through the capsule init: an output limit) or landlock")
	initBin := flag.String("init", "", "the capsule binary the sandbox re-executes")
	n := flag.Int("n", 50, "calls")
	flag.Parse()
	if err := run(*mode, *initBin, *n); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxbench:", err)
		os.Exit(1)
	}
}

func run(mode, initBin string, n int) error {
	ws, err := os.MkdirTemp("", "sandboxbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	start, release, done, err := starter(mode, initBin, ws)
	if err != nil {
		return err
	}
	defer done()
	var times []time.Duration
	var maxrss int64 // of the calls' process trees, not the probe's
	for range n {
		t0 := time.Now()
		cmd, err := start()
		if err != nil {
			return err
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v: %s", mode, err, out)
		}
		release(cmd)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			maxrss = max(maxrss, ru.Maxrss)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	var ch, self syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ch)
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	cpu := func(ru syscall.Rusage) int64 { return (ru.Utime.Nano() + ru.Stime.Nano()) / 1000 / int64(n) }
	fmt.Printf("%s median_us %d p90_us %d child_maxrss_kb %d child_cpu_us %d self_cpu_us %d\n", mode,
		times[len(times)/2].Microseconds(), times[len(times)*9/10].Microseconds(), maxrss, cpu(ch), cpu(self))
	return nil
}

// starter returns what makes one command of mode, and what releases it
// once waited for (as the run tool does).
func starter(mode, initBin, ws string) (start func() (*exec.Cmd, error), release func(*exec.Cmd), done func(), err error) {
	if mode == "bare" {
		return func() (*exec.Cmd, error) { return exec.Command("true"), nil }, func(*exec.Cmd) {}, func() {}, nil
	}
	if mode == "bwrap-cli" { // bwrap's own cost: the same namespaces and mounts, nothing of ours
		args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
			"--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--symlink", "usr/bin", "/bin",
			"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--dev", "/dev", "--proc", "/proc",
			"--tmpfs", "/tmp", "--bind", ws, ws, "--chdir", ws, "--", "true"}
		return func() (*exec.Cmd, error) { return exec.Command("bwrap", args...), nil }, func(*exec.Cmd) {}, func() {}, nil
	}
	kind := mode
	p := sandbox.Policy{Workspace: ws, Limits: sandbox.Limits{Processes: 64, MemoryMB: 1024, DiskMB: 256, Wall: time.Minute}}
	if mode == "bwrap-init" {
		kind, p.Limits.OutputBytes = sandbox.KindBwrap, 1<<20
	}
	os.Setenv(sandbox.ForceEnv, kind)
	sb, err := sandbox.Probe(initBin)
	if err != nil {
		return nil, nil, nil, err
	}
	if sb.Kind() != kind {
		sb.Close()
		return nil, nil, nil, fmt.Errorf("no %s sandbox: %s", kind, sb.Reason())
	}
	start = func() (*exec.Cmd, error) { return sb.Command(context.Background(), p, []string{"true"}) }
	return start, sb.Release, func() { sb.Close() }, nil
}
