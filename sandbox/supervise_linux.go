package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// termGrace is how long the supervisor waits after forwarding SIGTERM or
// SIGINT before it kills the whole tree.
const termGrace = 2 * time.Second

// dieWithParent makes the supervisor die with the node.
func dieWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// supervise is the first stage, outside the sandbox: it creates the
// per-command cgroups and private /tmp, starts the confined child, enforces
// the wall time and the output cap, kills whatever the command left behind
// and removes what it created. It exits as the command did, after the
// clean-up (a death by signal is passed on by signaling itself).
func supervise(c config) int {
	code, sig := superviseRun(c)
	return exitAs(code, sig)
}

func superviseRun(c config) (int, syscall.Signal) {
	if c.Tmp != "" {
		if err := os.Mkdir(c.Tmp, 0o700); err != nil {
			return setupFailed(fmt.Errorf("private tmp: %w", err)), 0
		}
		defer os.RemoveAll(c.Tmp)
	}
	cg, err := createCgroups(c.Cgroups, c.Limits)
	defer cg.remove()
	if err != nil {
		return setupFailed(err), 0
	}
	child, out, err := childCommand(c, cg)
	if err != nil {
		return setupFailed(err), 0
	}
	if err := child.Start(); err != nil {
		out.closeWriters()
		return setupFailed(fmt.Errorf("start: %w", err)), 0
	}
	out.closeWriters()
	code, sig := watch(child, c.Limits.Wall, out)
	killTree(child.Process.Pid, cg)
	out.wait()
	return code, sig
}

// childCommand is the confined child: bwrap running the inner stage, or the
// inner stage itself (landlock and none modes).
func childCommand(c config, cg *cgroups) (*exec.Cmd, *capper, error) {
	argv := []string{c.Self, Verb, stageInner}
	if c.Kind == KindBwrap {
		argv = append(append(append([]string{c.Bwrap}, c.BwrapArgs...), "--", innerInit), Verb, stageInner)
	}
	c.CgroupFDs = nil
	for i := range cg.procs {
		c.CgroupFDs = append(c.CgroupFDs, 3+i)
	}
	env, err := c.envValue()
	if err != nil {
		return nil, nil, err
	}
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Dir: "/", Env: append(append([]string(nil), c.Env...), env)}
	cmd.Stdin = os.Stdin
	cmd.ExtraFiles = cg.procs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := newCapper(c.Limits.OutputBytes)
	if err != nil {
		return nil, nil, err
	}
	cmd.Stdout, cmd.Stderr = out.stdout, out.stderr
	return cmd, out, nil
}

// watch waits for the child, for the wall time, for the output cap and for
// signals to forward; it returns the exit code (or -1) and the signal the
// child died of (or 0).
func watch(child *exec.Cmd, wall time.Duration, out *capper) (int, syscall.Signal) {
	done := make(chan struct{})
	go func() { child.Wait(); close(done) }()
	sigc := make(chan os.Signal, 4)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	var wallC, graceC <-chan time.Time
	if wall > 0 {
		wallC = time.After(wall)
	}
	for {
		select {
		case <-done:
			ws := child.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				return -1, ws.Signal()
			}
			return ws.ExitStatus(), 0
		case <-wallC:
			killTree(child.Process.Pid, nil)
			<-done
			fmt.Fprintf(os.Stderr, "\n%skilled: wall time limit of %v reached\n", MarkerPrefix, wall)
			return ExitWallTime, 0
		case <-out.exceeded:
			killTree(child.Process.Pid, nil)
			<-done
			fmt.Fprintf(os.Stderr, "\n%skilled: output limit of %d bytes reached\n", MarkerPrefix, out.limit)
			return ExitOutput, 0
		case s := <-sigc:
			child.Process.Signal(s)
			if graceC == nil {
				graceC = time.After(termGrace)
			}
		case <-graceC:
			killTree(child.Process.Pid, nil)
		}
	}
}

// killTree kills the child's process group and every process left in the
// command's cgroups (a bwrap sandbox's processes die with its pid namespace).
func killTree(pid int, cg *cgroups) {
	syscall.Kill(-pid, syscall.SIGKILL)
	syscall.Kill(pid, syscall.SIGKILL)
	if cg != nil {
		cg.killAll()
	}
}

// exitAs exits like the command did: with its status, or by its signal.
func exitAs(code int, sig syscall.Signal) int {
	if sig == 0 {
		return code
	}
	signal.Reset(sig)
	syscall.Kill(os.Getpid(), sig)
	time.Sleep(10 * time.Millisecond) // the signal is delivered meanwhile
	return 128 + int(sig)
}

// capper passes the command's stdout and stderr through, together capped at
// limit bytes when limit > 0; without a limit the command writes straight
// to the supervisor's own descriptors.
type capper struct {
	limit          int64
	stdout, stderr *os.File // the command's ends
	readers        []*os.File
	written        atomic.Int64
	exceeded       chan struct{}
	once           sync.Once
	wg             sync.WaitGroup
}

func newCapper(limit int64) (*capper, error) {
	c := &capper{limit: limit, stdout: os.Stdout, stderr: os.Stderr, exceeded: make(chan struct{})}
	if limit <= 0 {
		return c, nil
	}
	var err error
	if c.stdout, err = c.pipe(os.Stdout); err != nil {
		return nil, err
	}
	if c.stderr, err = c.pipe(os.Stderr); err != nil {
		return nil, err
	}
	return c, nil
}

// pipe returns the write end of a pipe whose output is copied to dst.
func (c *capper) pipe(dst *os.File) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	c.readers = append(c.readers, r)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.copy(dst, r)
	}()
	return w, nil
}

func (c *capper) copy(dst io.Writer, src *os.File) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			total := c.written.Add(int64(n))
			keep := int64(n)
			if total > c.limit {
				keep = max(0, c.limit-(total-int64(n)))
				c.once.Do(func() { close(c.exceeded) })
			}
			dst.Write(buf[:keep])
		}
		if err != nil {
			return
		}
	}
}

// closeWriters closes the supervisor's copies of the command's ends.
func (c *capper) closeWriters() {
	if c.limit > 0 {
		c.stdout.Close()
		c.stderr.Close()
	}
}

// wait waits until both copies end (every writer is closed, or dead), or a
// second at most: a process that escaped the kill may hold a writer.
func (c *capper) wait() {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// itoa is strconv.Itoa, for the cgroup files.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
