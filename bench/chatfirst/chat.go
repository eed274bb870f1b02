package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// runChat runs `capsule agent chat` on a pipe, says one line once the
// chat is watching, and prints, in Unix nanoseconds, when the line was
// written and when the first byte of the assistant's streamed text
// ("assistant: " and what follows) was read from chat's stdout. It then
// waits for the turn to end ([idle]), closes stdin and waits for chat.
func runChat(args []string) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	bin := fs.String("cap", "capsule", "the capsule binary")
	data := fs.String("data", "", "the node's data folder")
	agent := fs.String("agent", "", "the agent's ID")
	text := fs.String("line", "hello", "the line to say")
	settle := fs.Duration("settle", 300*time.Millisecond, "wait after the chat's first output (or -ready) before saying")
	ready := fs.Duration("ready", 2*time.Second, "longest wait for the chat's first output")
	timeout := fs.Duration("timeout", 30*time.Second, "longest wait for the answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmd := exec.Command(*bin, "agent", "chat", *agent, "--data", *data)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := newOutReader(stdout)
	// The watch is open once chat has shown the agent's state; without
	// output, say after -ready anyway.
	_, _ = r.waitFor(0, nil, 1, *ready)
	time.Sleep(*settle)
	mark := r.mark()
	wrote := time.Now()
	if _, err := io.WriteString(stdin, *text+"\n"); err != nil {
		return err
	}
	first, err := r.waitFor(mark, []byte("assistant: "), 1, *timeout)
	if err != nil {
		return err
	}
	if _, err := r.waitFor(mark, []byte("\n[idle]"), 0, *timeout); err != nil {
		return err
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	fmt.Printf("%d %d\n", wrote.UnixNano(), first.UnixNano())
	return nil
}

// outReader collects chat's stdout, stamping each read.
type outReader struct {
	chunks chan chunk
	done   chan error
	seen   []byte
}

type chunk struct {
	at time.Time
	b  []byte
}

func newOutReader(r io.Reader) *outReader {
	o := &outReader{chunks: make(chan chunk, 1024), done: make(chan error, 1)}
	go func() {
		b := make([]byte, 64<<10)
		for {
			n, err := r.Read(b)
			if n > 0 {
				o.chunks <- chunk{time.Now(), append([]byte(nil), b[:n]...)}
			}
			if err != nil {
				o.done <- err
				return
			}
		}
	}()
	return o
}

// mark takes in what has been read so far and returns its length.
func (o *outReader) mark() int {
	for {
		select {
		case c := <-o.chunks:
			o.seen = append(o.seen, c.b...)
		default:
			return len(o.seen)
		}
	}
}

// waitFor returns when stdout after mark holds want followed by extra
// more bytes: the time of the read that completed it.
func (o *outReader) waitFor(mark int, want []byte, extra int, timeout time.Duration) (time.Time, error) {
	if i := bytes.Index(o.seen[mark:], want); i >= 0 && len(o.seen)-mark-i-len(want) >= extra {
		return time.Now(), nil // already read: only the turn's end waits this way
	}
	deadline := time.After(timeout)
	for {
		select {
		case c := <-o.chunks:
			o.seen = append(o.seen, c.b...)
			if i := bytes.Index(o.seen[mark:], want); i >= 0 && len(o.seen)-mark-i-len(want) >= extra {
				return c.at, nil
			}
		case err := <-o.done:
			return time.Time{}, fmt.Errorf("chat's stdout ended before %q: %w (got %q)", want, err, o.seen[mark:])
		case <-deadline:
			return time.Time{}, errors.New("timed out waiting for " + string(want))
		}
	}
}
