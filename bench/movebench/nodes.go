package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/e2e/faultproxy"
	"github.com/agentcapsule/capsule/internal/nodeproc"
	"github.com/agentcapsule/capsule/node"
)

// proc is one `capsule node` process of the bench.
type proc struct {
	name   string
	ip     string
	dir    string
	log    string
	id     string
	listen string
	cmd    *exec.Cmd
	exited <-chan struct{}
	// In-process mode (-inprocess): the node runs in this process, logging
	// at debug level (the timing of every action and request) to log.
	n    *node.Node
	logf *os.File
}

func (p *proc) client() *api.LocalClient {
	return api.NewLocalClient(filepath.Join(p.dir, "node.sock"))
}

// pair is the two nodes of the bench, each reaching the other through a
// proxy that counts the bytes on the wire (TLS records included).
type pair struct {
	bin       string
	a, b      *proc
	ab, ba    *faultproxy.Proxy // a's requests to b, b's requests to a
	inprocess bool
}

// newPair creates two data folders under root, wires each node to the
// other through a counting proxy, and starts both.
func newPair(bin, root string, inprocess bool) (*pair, error) {
	ipB := "127.0.0.2"
	if !canBind(ipB) {
		ipB = "127.0.0.1"
	}
	pr := &pair{bin: bin, inprocess: inprocess,
		a: &proc{name: "A", ip: "127.0.0.1", dir: filepath.Join(root, "A"), log: filepath.Join(root, "A.log"), listen: "127.0.0.1:0"},
		b: &proc{name: "B", ip: ipB, dir: filepath.Join(root, "B"), log: filepath.Join(root, "B.log"), listen: ipB + ":0"}}
	for _, p := range []*proc{pr.a, pr.b} {
		out, err := pr.cli("node", "id", "--data", p.dir)
		if err != nil {
			return nil, err
		}
		p.id = strings.TrimSpace(out)
	}
	var err error
	if pr.ab, err = faultproxy.New(pr.a.ip+":0", ""); err != nil {
		return nil, err
	}
	if pr.ba, err = faultproxy.New(pr.b.ip+":0", ""); err != nil {
		return nil, err
	}
	if _, err := pr.cli("node", "peer", "add", pr.b.id, pr.ab.Addr(), "--data", pr.a.dir); err != nil {
		return nil, err
	}
	if _, err := pr.cli("node", "peer", "add", pr.a.id, pr.ba.Addr(), "--data", pr.b.dir); err != nil {
		return nil, err
	}
	for _, p := range []*proc{pr.a, pr.b} {
		if err := pr.start(p); err != nil {
			return nil, err
		}
	}
	pr.ab.SetUpstream(pr.b.listen)
	pr.ba.SetUpstream(pr.a.listen)
	return pr, nil
}

// canBind reports whether this machine lets us listen on ip (Linux does
// for all of 127.0.0.0/8).
func canBind(ip string) bool {
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// proxy returns the proxy carrying from's requests to the other node.
func (pr *pair) proxy(from *proc) *faultproxy.Proxy {
	if from == pr.a {
		return pr.ab
	}
	return pr.ba
}

func (pr *pair) other(p *proc) *proc {
	if p == pr.a {
		return pr.b
	}
	return pr.a
}

// start runs p and waits for the JSON line it prints once it serves.
func (pr *pair) start(p *proc) error {
	if pr.inprocess {
		return p.startInProcess()
	}
	np, err := nodeproc.Start(nodeproc.Config{Bin: pr.bin, Data: p.dir, Listen: p.listen, ID: p.id, Log: p.log, Wait: 30 * time.Second})
	if err != nil {
		return fmt.Errorf("node %s: %w; see %s", p.name, err, p.log)
	}
	p.cmd, p.exited, p.listen = np.Cmd, np.Exited, np.Listen
	return nil
}

// startInProcess runs the node in this process, as `capsule node` would
// (local API on DIR/node.sock), logging at debug level.
func (p *proc) startInProcess() error {
	f, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n, err := node.New(node.Config{Dir: p.dir, Listen: p.listen, Logger: logger})
	if err == nil {
		err = n.Start()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("node %s: %w", p.name, err)
	}
	p.n, p.logf, p.listen = n, f, n.Addr()
	return nil
}

func (p *proc) closeInProcess() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := p.n.Close(ctx)
	p.logf.Close()
	p.n = nil
	return err
}

// stop ends p with SIGTERM (agents freeze and commit) and waits.
func (pr *pair) stop(p *proc) error {
	if p.n != nil {
		return p.closeInProcess()
	}
	if p.cmd == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("node %s did not stop within 60 s of SIGTERM", p.name)
	}
	p.cmd = nil
	return nil
}

// close stops both nodes and both proxies.
func (pr *pair) close() {
	for _, p := range []*proc{pr.a, pr.b} {
		if p.n != nil {
			_ = p.closeInProcess()
		}
		if p.cmd != nil {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	for _, px := range []*faultproxy.Proxy{pr.ab, pr.ba} {
		if px != nil {
			px.Close()
		}
	}
}

// cli runs the capsule binary and returns its stdout.
func (pr *pair) cli(args ...string) (string, error) {
	cmd := exec.Command(pr.bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("capsule %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// waitEvents waits until the agent's journal on p holds at least n events.
func waitEvents(p *proc, agent string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		st, err := p.client().Agent(context.Background(), agent)
		if err == nil && st.Events >= n {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("timed out waiting for journal events")
}
