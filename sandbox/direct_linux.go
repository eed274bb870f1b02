package sandbox

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"weak"

	"golang.org/x/net/bpf"
)

// direct reports whether a command under p can take the direct path:
// bwrap runs argv itself, with no capsule process started for the call.
// A Go init costs more than the whole bwrap set-up here (the capsule
// binary's package initialisation alone takes tens of milliseconds), so
// the path that needs none is the one a `run` call takes: bwrap without
// network and without an output limit (the run tool caps output itself),
// with util-linux's prlimit to set the rlimits.
func (s *Sandbox) direct(kind string, p Policy) bool {
	return kind == KindBwrap && p.network() == NetworkNone && p.Limits.OutputBytes == 0 && s.prlimit != ""
}

// directCommand is bwrap running, inside the sandbox, a shell that joins
// the command's cgroups through inherited descriptors and then prlimit,
// which sets the rlimits and executes argv. bwrap loads the seccomp filter
// (--seccomp). The node does what the supervisor does on the other paths:
// it creates the cgroups and reuses them once the command is done (gc), the
// wall time is a deadline on the Cmd's context, and bwrap's pid namespace
// takes every process of the command down with it.
func (s *Sandbox) directCommand(ctx context.Context, p Policy, argv []string) (*exec.Cmd, error) {
	s.gc()
	cg, reused, err := s.checkout(p.Limits)
	if err != nil {
		cg.remove()
		return nil, err
	}
	filter, err := bwrapFilter()
	if err != nil {
		cg.remove()
		return nil, err
	}
	files := append(append([]*os.File(nil), cg.procs...), filter)
	args := append(bwrapArgs("", p, ""), "--seccomp", strconv.Itoa(3+len(cg.procs)), "--", "/bin/sh", "-c",
		joinScript(len(cg.procs)), "capsule-sandbox", s.prlimit)
	args = append(append(append(args, prlimitFlags(p.Limits)...), "--"), argv...)
	if p.Limits.Wall > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		time.AfterFunc(p.Limits.Wall, cancel)
	}
	cmd := exec.CommandContext(ctx, s.bwrap, args...)
	cmd.Env = commandEnv(p, "/tmp", 0)
	cmd.Dir = "/"
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	s.track(cmd, cg, reused)
	return cmd, nil
}

// joinScript is the shell script that writes "0" (itself) into the
// cgroup.procs of descriptors 3..3+n-1, closes them and every other
// inherited descriptor above 2, and executes "$@".
func joinScript(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "echo 0 >&%d && ", 3+i)
	}
	for i := range n + 1 {
		fmt.Fprintf(&b, "exec %d>&- && ", 3+i)
	}
	b.WriteString(`exec "$@"`)
	return b.String()
}

// prlimitFlags are prlimit's options for l.
func prlimitFlags(l Limits) []string {
	var f []string
	if l.Processes > 0 {
		f = append(f, "--nproc="+itoa(int64(l.Processes)))
	}
	if l.MemoryMB > 0 {
		f = append(f, "--as="+itoa(int64(l.MemoryMB)<<20))
	}
	if l.DiskMB > 0 {
		f = append(f, "--fsize="+itoa(int64(l.DiskMB)<<20))
	}
	if l.Wall > 0 {
		f = append(f, "--cpu="+itoa(int64(l.Wall.Seconds())+1))
	}
	return f
}

// bwrapProgram is the bwrap mode's seccomp filter as struct sock_filter
// records, assembled once.
var bwrapProgram = sync.OnceValues(func() ([]byte, error) {
	f := seccompFilter(config{Kind: KindBwrap})
	insts, err := f.Policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	buf := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		buf = binary.LittleEndian.AppendUint16(buf, r.Op)
		buf = append(buf, r.Jt, r.Jf)
		buf = binary.LittleEndian.AppendUint32(buf, r.K)
	}
	return buf, nil
})

// bwrapFilter returns a pipe from which bwrap reads the seccomp filter.
func bwrapFilter() (*os.File, error) {
	buf, err := bwrapProgram()
	if err != nil {
		return nil, err
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	defer wr.Close()
	if _, err := wr.Write(buf); err != nil { // far below a pipe's capacity
		rd.Close()
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	return rd, nil
}

// maxFree bounds the cgroups kept for reuse: creating and removing a
// cgroup costs more than the rest of a direct command's set-up here.
const maxFree = 16

// pending is one direct command's cgroups until the command is done: the
// caller said so (Release), its Cmd is garbage, or its cgroups show that
// it ran and ended (fresh ones only: pids.peak is not reset on reuse).
type pending struct {
	cmd      weak.Pointer[exec.Cmd]
	cg       *cgroups
	files    []*os.File // the descriptors the Cmd passes on
	reused   bool
	released atomic.Bool
	once     sync.Once
}

func (pd *pending) closeFiles() {
	pd.once.Do(func() {
		for _, f := range pd.files {
			f.Close()
		}
		pd.cg.procs = nil
	})
}

// track keeps cg until cmd is done: the caller may start cmd at any time
// before, so its cgroups must stay until then.
func (s *Sandbox) track(cmd *exec.Cmd, cg *cgroups, reused bool) {
	pd := &pending{cmd: weak.Make(cmd), cg: cg, files: cmd.ExtraFiles, reused: reused}
	runtime.AddCleanup(cmd, func(pd *pending) {
		pd.closeFiles()
		pd.released.Store(true)
	}, pd)
	s.mu.Lock()
	s.pending = append(s.pending, pd)
	s.mu.Unlock()
}

// Release tells the sandbox that cmd, returned by Command, has been waited
// for (or will never start), so that its resources are reused at once
// rather than when cmd is garbage. Calling it is optional; a cmd that
// still runs keeps its resources.
func (s *Sandbox) Release(cmd *exec.Cmd) {
	s.mu.Lock()
	for _, pd := range s.pending {
		if pd.cmd.Value() == cmd {
			pd.closeFiles()
			pd.released.Store(true)
		}
	}
	s.mu.Unlock()
	s.gc()
}

// gc moves the cgroups of direct commands that are done and empty to the
// free list (or removes them when it is full).
func (s *Sandbox) gc() {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := s.pending[:0]
	for _, pd := range s.pending {
		done := pd.released.Load() || (!pd.reused && pd.cg.finished())
		if !done || !pd.cg.empty() {
			keep = append(keep, pd)
			continue
		}
		pd.closeFiles()
		if len(s.free) < maxFree {
			s.free = append(s.free, pd.cg)
		} else {
			pd.cg.remove()
		}
	}
	clear(s.pending[len(keep):])
	s.pending = keep
}

// checkout returns cgroups for one direct command with l's limits: free
// ones when there are, else new ones; reused says which.
func (s *Sandbox) checkout(l Limits) (cg *cgroups, reused bool, err error) {
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		cg, s.free = s.free[n-1], s.free[:n-1]
	}
	s.mu.Unlock()
	if cg == nil {
		n := s.seq.Add(1)
		var dirs []string
		for _, d := range s.cgroups {
			dirs = append(dirs, d+"/"+strconv.FormatUint(n, 10))
		}
		cg, err = createCgroups(dirs, l)
		return cg, false, err
	}
	return cg, true, cg.reopen(l)
}
