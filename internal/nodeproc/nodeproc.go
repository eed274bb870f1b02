// Package nodeproc runs `capsule node` as a child process and waits until
// it serves: the end-to-end tests and the move benchmark start, kill and
// restart real node processes the same way.
package nodeproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Config says which node to run.
type Config struct {
	Bin    string   // the capsule binary
	Data   string   // --data
	Listen string   // --listen
	ID     string   // the node ID its ready line must name
	Log    string   // file its standard error is appended to
	Args   []string // more arguments after `node --data D --listen L`
	Wait   time.Duration
}

// Proc is a running node.
type Proc struct {
	Cmd    *exec.Cmd
	Exited <-chan struct{} // closed once the process is gone and waited for
	Listen string          // the address its ready line names
}

// Start runs the node, killed with this process (on Linux), and returns
// once its ready line names cfg.ID. A node that exits first, names another
// ID or stays silent for cfg.Wait is killed and waited for, and the error
// says why.
func Start(cfg Config) (*Proc, error) {
	logf, err := os.OpenFile(cfg.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(cfg.Bin, append([]string{"node", "--data", cfg.Data, "--listen", cfg.Listen}, cfg.Args...)...)
	cmd.Stderr = logf
	DieWithParent(cmd)
	// An os.Pipe of our own, not StdoutPipe: Wait (in its own goroutine)
	// must not close what we read.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func(err error) (*Proc, error) {
		_ = cmd.Process.Kill()
		<-exited
		return nil, err
	}
	line, err := readLine(stdout, exited, cfg.Wait)
	if err != nil {
		return stop(err)
	}
	var ready struct{ Node, Listen string }
	if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.Node != cfg.ID {
		return stop(fmt.Errorf("ready line %q: want node %s (%v)", line, cfg.ID, err))
	}
	return &Proc{Cmd: cmd, Exited: exited, Listen: ready.Listen}, nil
}

// readLine reads the first line of r, unless the process exits or the
// timeout passes first; the rest of r is drained in the background until
// the process exits, then r is closed.
func readLine(r *os.File, exited <-chan struct{}, timeout time.Duration) (string, error) {
	got := make(chan string, 1)
	go func() {
		br := bufio.NewReader(r)
		line, _ := br.ReadString('\n')
		got <- strings.TrimSpace(line)
		_, _ = br.WriteTo(io.Discard)
		r.Close()
	}()
	select {
	case l := <-got:
		if l == "" {
			return "", errors.New("the node exited before it served")
		}
		return l, nil
	case <-exited:
		return "", errors.New("the node exited before it served")
	case <-time.After(timeout):
		return "", fmt.Errorf("no ready line within %v", timeout)
	}
}
