package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentcapsule/capsule/e2e/faultproxy"
	"github.com/agentcapsule/capsule/internal/nodeproc"
)

// rsyncd is an rsync daemon on 127.0.0.1 with two writable modules:
// "capsule" (files in root/rsync-capsule) and "work" (root/rsync-work).
// Clients reach it through the same kind of byte-counting proxy the nodes
// reach each other through, so both pay the proxy's copy.
type rsyncd struct {
	root string
	port int
	cmd  *exec.Cmd
	px   *faultproxy.Proxy
}

// modules of the daemon.
var modules = []string{"capsule", "work"}

func (d *rsyncd) dir(module string) string { return filepath.Join(d.root, "rsync-"+module) }

// startRsyncd writes a config under root and runs `rsync --daemon
// --no-detach` until stop.
func startRsyncd(root string) (*rsyncd, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	d := &rsyncd{root: root, port: port}
	conf := filepath.Join(root, "rsyncd.conf")
	text := fmt.Sprintf("use chroot = false\nuid = %d\ngid = %d\npid file = %s\nlog file = %s\n",
		os.Getuid(), os.Getgid(), filepath.Join(root, "rsyncd.pid"), filepath.Join(root, "rsyncd.log"))
	for _, m := range modules {
		if err := os.MkdirAll(d.dir(m), 0o755); err != nil {
			return nil, err
		}
		text += fmt.Sprintf("[%s]\n  path = %s\n  read only = false\n", m, d.dir(m))
	}
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, err
	}
	d.cmd = exec.Command("rsync", "--daemon", "--no-detach", "--config="+conf, "--address=127.0.0.1", "--port="+strconv.Itoa(port))
	nodeproc.DieWithParent(d.cmd)
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	if err := waitListening(fmt.Sprintf("127.0.0.1:%d", port), 10*time.Second); err != nil {
		return d, err
	}
	d.px, err = faultproxy.New("127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", port))
	return d, err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("rsync daemon not listening on %s", addr)
}

func (d *rsyncd) stop() {
	if d.px != nil {
		d.px.Close()
	}
	if d.cmd != nil && d.cmd.Process != nil {
		_ = d.cmd.Process.Kill()
		_ = d.cmd.Wait()
	}
}

// rsyncRun is one `rsync -a --stats` run.
type rsyncRun struct {
	Seconds  float64
	Sent     int64 // "Total bytes sent"
	Received int64 // "Total bytes received"
}

// push runs `rsync -a --stats [extra] SRC/ rsync://PROXY/MODULE/`.
func (d *rsyncd) push(src, module string, extra ...string) (rsyncRun, error) {
	args := append([]string{"-a", "--stats"}, extra...)
	args = append(args, strings.TrimSuffix(src, "/")+"/", fmt.Sprintf("rsync://%s/%s/", d.px.Addr(), module))
	cmd := exec.Command("rsync", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	run := rsyncRun{Seconds: time.Since(start).Seconds()}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 24 {
		err = nil // "some files vanished": the running agent's temporary files
	}
	if err != nil {
		return run, fmt.Errorf("rsync: %w: %s", err, errb.String())
	}
	run.Sent = statValue(out.String(), "Total bytes sent")
	run.Received = statValue(out.String(), "Total bytes received")
	return run, nil
}

// statValue reads "LABEL: 1,234" from rsync's --stats output.
func statValue(stats, label string) int64 {
	m := regexp.MustCompile(regexp.QuoteMeta(label) + `:\s*([0-9,]+)`).FindStringSubmatch(stats)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	return n
}

// reset empties a module's folder.
func (d *rsyncd) reset(module string) error {
	if err := os.RemoveAll(d.dir(module)); err != nil {
		return err
	}
	return os.MkdirAll(d.dir(module), 0o755)
}
