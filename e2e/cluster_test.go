package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/e2e/faultproxy"
	"github.com/agentcapsule/capsule/internal/nodeproc"
)

// stepInterval paces the built-in runner of every node: fast enough that
// the journal grows visibly between two looks.
const stepInterval = "20ms"

// proc is one `capsule node` process and its data folder, kept across
// restarts.
type proc struct {
	name   string // n1, n2, ...
	ip     string // the loopback address it listens on
	dir    string // its data folder
	log    string // its stderr, appended across restarts
	id     string // its node ID
	listen string // host:port, fixed after the first start

	// life serializes starts and kills of this node between the fault
	// goroutines of one round.
	life sync.Mutex

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited <-chan struct{} // closed when the current process has exited
	starts int
}

func (p *proc) socket() string { return filepath.Join(p.dir, "node.sock") }

func (p *proc) client() *api.LocalClient { return api.NewLocalClient(p.socket()) }

// running reports whether the process is alive.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// cluster is a set of node processes, each reaching each other one through
// its own fault proxy: proxy[i][j] carries node i's requests to node j.
type cluster struct {
	t     *testing.T
	root  string
	procs []*proc
	proxy [][]*faultproxy.Proxy
	// agent is the agent created, whose journals teardown checks when the
	// test failed before it could (a liveness failure may hide a safety one).
	agent           string
	journalsChecked bool
	// nodeArgs are more arguments of every `capsule node` start (e.g.
	// --model-endpoint).
	nodeArgs []string
}

// loopbackIPs returns n loopback addresses to listen on: 127.0.0.1, .2, ...
// when the kernel lets us bind them (Linux does, for all of 127.0.0.0/8),
// otherwise 127.0.0.1 n times (distinct ports then tell the nodes apart).
func loopbackIPs(t *testing.T, n int) []string {
	ips := make([]string, n)
	for i := range ips {
		ips[i] = fmt.Sprintf("127.0.0.%d", i+1)
		ln, err := net.Listen("tcp", ips[i]+":0")
		if err != nil {
			t.Logf("cannot bind %s (%v): falling back to distinct ports on 127.0.0.1", ips[i], err)
			for j := range ips {
				ips[j] = "127.0.0.1"
			}
			return ips
		}
		ln.Close()
	}
	return ips
}

// newCluster creates n nodes (keys, peers through proxies) and starts them.
func newCluster(t *testing.T, n int) *cluster { return newClusterArgs(t, n, nil) }

// newClusterArgs is newCluster with more arguments for every node start.
func newClusterArgs(t *testing.T, n int, nodeArgs []string) *cluster {
	trackSources(t)
	root := t.TempDir()
	if *flagKeep {
		var err error
		if root, err = os.MkdirTemp("", "capsule-e2e-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("data folders and logs kept in %s", root)
	}
	c := &cluster{t: t, root: root, nodeArgs: nodeArgs}
	t.Cleanup(c.teardown)
	for i, ip := range loopbackIPs(t, n) {
		name := fmt.Sprintf("n%d", i+1)
		p := &proc{name: name, ip: ip, dir: filepath.Join(root, name), log: filepath.Join(root, name+".log"), listen: ip + ":0"}
		out, err := c.cli(context.Background(), "node", "id", "--data", p.dir)
		if err != nil {
			t.Fatalf("%s: capsule node id: %v", name, err)
		}
		p.id = strings.TrimSpace(out)
		c.procs = append(c.procs, p)
	}
	c.wire()
	for _, p := range c.procs {
		if err := c.start(p); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.procs {
		for j, p := range c.procs {
			if i != j {
				c.proxy[i][j].SetUpstream(p.listen)
			}
		}
	}
	return c
}

// wire creates the proxies and records each as the peer address, in the
// peers.json of the node that dials through it (the nodes are not running
// yet, so `capsule node peer add` edits the file).
func (c *cluster) wire() {
	n := len(c.procs)
	c.proxy = make([][]*faultproxy.Proxy, n)
	for i, from := range c.procs {
		c.proxy[i] = make([]*faultproxy.Proxy, n)
		for j, to := range c.procs {
			if i == j {
				continue
			}
			px, err := faultproxy.New(from.ip+":0", "")
			if err != nil {
				c.t.Fatal(err)
			}
			c.proxy[i][j] = px
			if _, err := c.cli(context.Background(), "node", "peer", "add", to.id, px.Addr(), "--data", from.dir); err != nil {
				c.t.Fatalf("%s: peer add %s: %v", from.name, to.name, err)
			}
		}
	}
}

// start runs the node process, unless it runs, and waits for its ready
// line. A restart listens on the address of the first start.
func (c *cluster) start(p *proc) error {
	p.life.Lock()
	defer p.life.Unlock()
	if p.running() {
		return nil
	}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = c.startOnce(p); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond) // the port may still be held
	}
	return err
}

func (c *cluster) startOnce(p *proc) error {
	if logf, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintf(logf, "=== start %d at %s\n", p.starts+1, time.Now().Format(time.RFC3339Nano))
		logf.Close()
	}
	np, err := nodeproc.Start(nodeproc.Config{Bin: capsuleBin, Data: p.dir, Listen: p.listen, ID: p.id, Log: p.log,
		Args: append([]string{"--step-interval", stepInterval}, c.nodeArgs...), Wait: 15 * time.Second})
	if err != nil {
		return fmt.Errorf("%s: start: %w\n%s", p.name, err, tail(p.log, 20))
	}
	p.mu.Lock()
	p.cmd, p.exited, p.listen = np.Cmd, np.Exited, np.Listen
	p.starts++
	p.mu.Unlock()
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *cluster) kill(p *proc) {
	p.life.Lock()
	defer p.life.Unlock()
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop sends SIGTERM (the node freezes its agents, commits and exits) and
// waits; it falls back to SIGKILL after the timeout. It returns the exit
// error, if any.
func (c *cluster) stop(p *proc, timeout time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || !p.running() {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		if !cmd.ProcessState.Success() {
			return fmt.Errorf("%s exited with %v after SIGTERM", p.name, cmd.ProcessState)
		}
		return nil
	case <-time.After(timeout):
		c.kill(p)
		return fmt.Errorf("%s did not exit within %v of SIGTERM", p.name, timeout)
	}
}

// restart starts p again if it is not running.
func (c *cluster) restart(p *proc) {
	if err := c.start(p); err != nil {
		c.t.Error(err)
	}
}

// teardown kills every process and closes every proxy, whatever happened;
// on failure it prints the end of each node's log.
func (c *cluster) teardown() {
	for _, p := range c.procs {
		c.kill(p)
	}
	for _, row := range c.proxy {
		for _, px := range row {
			if px != nil {
				px.Close()
			}
		}
	}
	if c.t.Failed() {
		for _, p := range c.procs {
			c.t.Logf("--- %s (%s) log tail:\n%s", p.name, p.id, tail(p.log, 40))
		}
		if c.agent != "" && !c.journalsChecked {
			c.checkJournalsOnDisk(c.agent)
		}
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cliError is a capsule command that failed: its exit and what it said.
type cliError struct {
	Args   []string
	Err    error // the *exec.ExitError, or why it did not run
	Stderr string
}

func (e *cliError) Error() string {
	return fmt.Sprintf("capsule %s: %v: %s", strings.Join(e.Args, " "), e.Err, e.Stderr)
}

func (e *cliError) Unwrap() error { return e.Err }

// cli runs the capsule binary and returns its stdout; a failure is a
// *cliError.
func (c *cluster) cli(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, capsuleBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), &cliError{Args: args, Err: err, Stderr: strings.TrimSpace(errb.String())}
	}
	return out.String(), nil
}

// createAgent creates an agent on p from the workspace folder ws.
func (c *cluster) createAgent(p *proc, ws string) string {
	out, err := c.cli(context.Background(), "agent", "create", "--name", "chaos", "--from", ws, "--data", p.dir, "--json")
	if err != nil {
		c.t.Fatal(err)
	}
	var st api.AgentStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("agent create --json: %v: %q", err, out)
	}
	c.agent = st.ID
	return st.ID
}

// move runs `capsule move --json` and returns the result it printed. A move
// that did not commit exits 3 but still prints its result; a move whose
// source died prints nothing (err says why).
func (c *cluster) move(ctx context.Context, from *proc, agent string, to *proc) (api.MoveResult, error) {
	out, err := c.cli(ctx, "move", agent, "--to", to.id, "--data", from.dir, "--json")
	var res api.MoveResult
	if jerr := json.Unmarshal([]byte(out), &res); jerr == nil && res.Outcome != "" {
		return res, nil
	}
	if err == nil {
		err = fmt.Errorf("capsule move printed no result: %q", out)
	}
	return res, err
}

// resolve runs the operator's `capsule move resolve --json` on p.
func (c *cluster) resolve(ctx context.Context, p *proc, agent string) (api.MoveStatus, error) {
	out, err := c.cli(ctx, "move", "resolve", agent, "--data", p.dir, "--json")
	var st api.MoveStatus
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal([]byte(out), &st)
}

// view is what one node says about the agent at one moment: the answer
// was made between asked and answered, by the start-th process of the
// node.
type view struct {
	up       bool
	err      error
	st       api.AgentStatus
	asked    time.Time
	answered time.Time
	start    int
}

// views asks every node about the agent over its local API.
func (c *cluster) views(agent string) []view {
	out := make([]view, len(c.procs))
	var wg sync.WaitGroup
	for i, p := range c.procs {
		if !p.running() {
			continue
		}
		p.mu.Lock()
		start := p.starts
		p.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			asked := time.Now()
			st, err := p.client().Agent(ctx, agent)
			out[i] = view{up: true, err: err, st: st, asked: asked, answered: time.Now(), start: start}
		}()
	}
	wg.Wait()
	return out
}

// describe renders views for a failure message.
func (c *cluster) describe(vs []view) string {
	var b strings.Builder
	for i, v := range vs {
		p := c.procs[i]
		switch {
		case !v.up:
			fmt.Fprintf(&b, "  %s %s: down\n", p.name, p.id)
		case v.err != nil:
			fmt.Fprintf(&b, "  %s %s: %v\n", p.name, p.id, v.err)
		default:
			fmt.Fprintf(&b, "  %s %s: state=%s epoch=%d holder=%s successor=%s events=%d", p.name, p.id, v.st.State, v.st.Epoch, v.st.Holder, v.st.Successor, v.st.Events)
			if m := v.st.Move; m != nil {
				fmt.Fprintf(&b, " move=%s->%s e%d phase=%s outcome=%s %s", m.MoveID, c.nameOf(m.To), m.Epoch, m.Phase, m.Outcome, m.Reason)
			}
			if v.st.Error != "" {
				fmt.Fprintf(&b, " error=%q", v.st.Error)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// nameOf returns the short name of a node ID, or the ID.
func (c *cluster) nameOf(id string) string {
	for _, p := range c.procs {
		if p.id == id {
			return p.name
		}
	}
	return id
}

// index returns the position of the node with the given ID, or -1.
func (c *cluster) index(id string) int {
	for i, p := range c.procs {
		if p.id == id {
			return i
		}
	}
	return -1
}
