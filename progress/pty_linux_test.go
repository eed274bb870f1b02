package progress_test

import (
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentcapsule/capsule/progress"
)

// openPTY returns the two ends of a new pseudo-terminal, without a cgo or
// third-party helper: /dev/ptmx, unlock, then the matching /dev/pts/N.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pty number: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// drain returns what was written to the terminal so far.
func drain(t *testing.T, master, tty *os.File) string {
	t.Helper()
	tty.Close()
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := master.Read(buf)
		out.Write(buf[:n])
		if err != nil { // EIO once the other end is closed and drained
			if err != io.EOF && !strings.Contains(err.Error(), "input/output error") {
				t.Fatalf("read pty: %v", err)
			}
			return out.String()
		}
	}
}

func TestDrawsOnTerminal(t *testing.T) {
	master, tty := openPTY(t)
	b := progress.New(tty, "export", 1<<20, false)
	b.Add(1 << 20)
	b.Finish()
	if got := drain(t, master, tty); !strings.Contains(got, "export") || !strings.Contains(got, "100%") {
		t.Errorf("terminal got %q, want a bar labelled export at 100%%", got)
	}
}

func TestQuietOnTerminal(t *testing.T) {
	master, tty := openPTY(t)
	b := progress.New(tty, "export", 1<<20, true)
	b.Add(1 << 20)
	b.Finish()
	if got := drain(t, master, tty); got != "" {
		t.Errorf("quiet bar on a terminal wrote %q", got)
	}
}
