package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// Launcher makes the command that starts a stdio server: argv is the
// spec's command and arguments, env the whole environment the server gets
// (secrets included; a Launcher never logs it), dir its working
// directory. The command must not be started; the Set sets its stdin,
// stdout and stderr, and puts it in a process group of its own unless it
// starts a session. ctx lives as long as the server: the Set cancels it
// once the server is stopped. The node passes the sandbox's.
type Launcher func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error)

// Exec is the Launcher that runs argv as it is, outside any sandbox: for
// tests and benchmarks. A node never uses it.
func Exec(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("mcp: empty command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	return cmd, nil
}

// proc is one running stdio server process.
type proc struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of its stdin
	stdout *os.File // our end of its stdout
	stderr *tail
	cancel context.CancelFunc
	exited chan struct{} // closed once Wait returned
	err    error         // what Wait returned, set before exited closes
	ended  sync.Once     // a stop or a kill, whichever comes first
}

// startProc starts argv through launch with pipes for stdin and stdout
// and the last bytes of stderr kept for messages.
func startProc(launch Launcher, argv, env []string, dir string, scrub func(string) string) (*proc, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := launch(ctx, argv, env, dir)
	if err != nil {
		cancel()
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		cancel()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		cancel()
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: inW, stdout: outR, stderr: &tail{scrub: scrub}, cancel: cancel, exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = time.Second // a grandchild holding stderr must not hold Wait
	}
	ownGroup(cmd)
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		cancel()
		inW.Close()
		outR.Close()
		return nil, err
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// ownGroup makes cmd the leader of a new process group, so that stopping
// it reaches every process it started; a command that starts its own
// session already is one.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if !cmd.SysProcAttr.Setsid {
		cmd.SysProcAttr.Setpgid = true
		cmd.SysProcAttr.Pgid = 0
	}
}

// pid is the process's ID, which is also its process group's.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// signalGroup sends sig to the process's whole group, or to the process
// alone when it leads none (a Launcher's command that joined another).
func (p *proc) signalGroup(sig syscall.Signal) {
	if syscall.Kill(-p.pid(), sig) != nil {
		p.cmd.Process.Signal(sig)
	}
}

// waitExit waits at most d for the process to exit and reports whether it did.
func (p *proc) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// stop ends the process as the MCP stdio transport asks: stdin closed,
// then SIGTERM after bound, then SIGKILL after bound more, each to the
// whole process group; and SIGKILL to the group once the leader is gone,
// so no process it started stays behind. It returns when the process was
// reaped.
func (p *proc) stop(bound time.Duration) { p.ended.Do(func() { p.end(bound) }) }

func (p *proc) end(bound time.Duration) {
	p.stdin.Close()
	if bound > 0 && !p.waitExit(bound) {
		p.signalGroup(syscall.SIGTERM)
		p.waitExit(bound)
	}
	p.signalGroup(syscall.SIGKILL) // the leader, if it is still there, and what it left
	<-p.exited
	p.signalGroup(syscall.SIGKILL)
	p.finish()
}

// kill ends the process and its group at once and reaps it; after a stop
// or a kill it does nothing.
func (p *proc) kill() { p.ended.Do(func() { p.end(0) }) }

func (p *proc) finish() {
	p.cancel()
	p.stdin.Close()
	p.stdout.Close()
}

// dead reports whether the process exited.
func (p *proc) dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// describe says how the process ended (it must have) with the last line
// of its stderr.
func (p *proc) describe() string {
	s := "exited"
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			s = "was killed by " + ws.Signal().String()
		} else {
			s = fmt.Sprintf("exited with status %d", ee.ExitCode())
		}
	}
	if last := p.stderr.last(); last != "" {
		s += " (stderr: " + last + ")"
	}
	return s
}

// tailMax is how many bytes of a server's stderr are kept.
const tailMax = 4 << 10

// tail keeps the last bytes written to it.
type tail struct {
	mu    sync.Mutex
	b     []byte
	scrub func(string) string
}

// Write keeps the end of p.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

// last returns the last non-empty line, without the secrets' values.
func (t *tail) last() string {
	t.mu.Lock()
	s := t.scrub(strings.TrimSpace(string(t.b))) // before any cut, which could split a value
	t.mu.Unlock()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[len(s)-200:]
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
	}
	return s
}
