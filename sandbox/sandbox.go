package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The kinds of sandbox.
const (
	KindBwrap    = "bwrap"
	KindLandlock = "landlock"
	KindNone     = "none"
)

// ForceEnv names the environment variable the probe reads to choose a kind
// ("bwrap" or "landlock") instead of the best available; tests and
// operators use it to exercise the Landlock path where bwrap works.
const ForceEnv = "CAPSULE_SANDBOX"

// ErrUnavailable is wrapped by Command's error when no sandbox can be set
// up on this host for a policy that is not Unsandboxed.
var ErrUnavailable = errors.New("sandbox: unavailable")

// Sandbox starts sandboxed commands of one kind, chosen once by Probe. It
// is safe for concurrent use.
type Sandbox struct {
	self        string
	kind        string
	reason      string
	bwrap       string
	prlimit     string // util-linux prlimit: sets the rlimits just before argv
	landlockABI int
	state       string   // private directory: proxy sockets, landlock tmp dirs
	cgroups     []string // parent cgroup directories, one per controller
	seq         atomic.Uint64

	mu      sync.Mutex
	proxies map[string]*Proxy
	pending []*pending // direct commands' cgroups
	free    []*cgroups // cgroups for reuse
}

// Probe chooses the sandbox for this host, once: bwrap when it runs a
// command here, otherwise Landlock with seccomp, otherwise none (Kind
// "none", with Reason saying why). self is the binary that Main runs in
// (os.Executable() when empty). The environment variable ForceEnv narrows
// the choice to one kind. An error means Probe could not even create its
// private directory.
func Probe(self string) (*Sandbox, error) {
	return probe(self, os.Getenv(ForceEnv))
}

func probe(self, force string) (*Sandbox, error) {
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: probe: %w", err)
		}
		self = exe
	}
	state, err := os.MkdirTemp("", "capsule-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: probe: %w", err)
	}
	s := &Sandbox{self: self, state: state, kind: KindNone, cgroups: cgroupParents(), proxies: map[string]*Proxy{}}
	if p, err := exec.LookPath("prlimit"); err == nil && underSystemDir(p) {
		s.prlimit = p
	}
	var reasons []string
	for _, k := range []string{KindBwrap, KindLandlock} {
		if force != "" && force != k {
			continue
		}
		err := s.try(k)
		if err == nil {
			s.kind = k
			return s, nil
		}
		reasons = append(reasons, fmt.Sprintf("%s: %v", k, err))
	}
	if force != "" && force != KindBwrap && force != KindLandlock {
		reasons = append(reasons, fmt.Sprintf("%s=%q names no sandbox", ForceEnv, force))
	}
	s.reason = strings.Join(reasons, "; ")
	return s, nil
}

// try checks that kind k is available and runs "true" in it by every path.
func (s *Sandbox) try(k string) error {
	switch k {
	case KindBwrap:
		p, err := exec.LookPath("bwrap")
		if err != nil {
			return err
		}
		s.bwrap = p
	case KindLandlock:
		abi, err := landlockABI()
		if err != nil {
			return err
		}
		s.landlockABI = abi
	}
	ws := filepath.Join(s.state, "probe")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return err
	}
	defer os.Remove(ws)
	// Both paths: the direct one (bwrap alone) and through the capsule init
	// (an output limit takes it), which needs this binary inside the sandbox.
	for _, p := range []Policy{{Workspace: ws}, {Workspace: ws, Limits: Limits{OutputBytes: 1 << 10}}} {
		if k != KindBwrap && p.Limits.OutputBytes > 0 {
			break // the first run took the init path already
		}
		cmd, err := s.command(context.Background(), k, p, []string{"true"})
		if err != nil {
			return err
		}
		out, err := cmd.CombinedOutput()
		s.Release(cmd)
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// Kind returns KindBwrap, KindLandlock or KindNone.
func (s *Sandbox) Kind() string { return s.kind }

// Reason says why no sandbox works on this host when Kind is KindNone.
func (s *Sandbox) Reason() string { return s.reason }

// Close stops the egress proxies and removes the sandbox's private
// directory and cgroups. Commands still running keep running.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	for _, p := range s.proxies {
		p.Close()
	}
	s.proxies = nil
	for _, pd := range s.pending {
		pd.closeFiles()
		pd.cg.remove()
	}
	for _, cg := range s.free {
		cg.remove()
	}
	s.pending, s.free = nil, nil
	s.mu.Unlock()
	for _, d := range s.cgroups {
		os.Remove(d)
	}
	return os.RemoveAll(s.state)
}

// Command returns the command that runs argv under p in the sandbox. The
// returned Cmd re-executes the sandbox's binary as an init that sets up the
// sandbox, applies the limits and then runs argv in p.Workspace; the
// caller may set Stdin, Stdout and Stderr and then starts it as any Cmd.
// Canceling ctx sends SIGTERM and then, after a grace period, kills the
// whole tree. When this host has no sandbox and p is not Unsandboxed, or
// the sandbox cannot enforce p, Command returns an error saying why
// (wrapping ErrUnavailable) and nothing runs.
func (s *Sandbox) Command(ctx context.Context, p Policy, argv []string) (*exec.Cmd, error) {
	kind := s.kind
	if p.Unsandboxed {
		kind = KindNone
	} else if kind == KindNone {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, s.reason)
	}
	return s.command(ctx, kind, p, argv)
}

func (s *Sandbox) command(ctx context.Context, kind string, p Policy, argv []string) (*exec.Cmd, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("%w: empty command", ErrPolicy)
	}
	if err := s.enforceable(p.Limits); err != nil {
		return nil, err
	}
	if s.direct(kind, p) {
		return s.directCommand(ctx, p, argv)
	}
	c, err := s.config(kind, p, argv)
	if err != nil {
		return nil, err
	}
	env, err := c.envValue()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, s.self, Verb, stageSupervise)
	cmd.Env = []string{env}
	cmd.Dir = "/"
	cmd.SysProcAttr = dieWithParent()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = termGrace + time.Second
	return cmd, nil
}

// config decides everything the init stages do for one command.
func (s *Sandbox) config(kind string, p Policy, argv []string) (config, error) {
	n := s.seq.Add(1)
	c := config{Kind: kind, Argv: argv, Workspace: p.Workspace, Limits: p.Limits, Network: p.network(),
		Self: s.self, LandlockABI: s.landlockABI, Prlimit: s.prlimit}
	for _, d := range s.cgroups {
		c.Cgroups = append(c.Cgroups, filepath.Join(d, strconv.FormatUint(n, 10)))
	}
	tmp := "/tmp"
	if kind != KindBwrap {
		c.Tmp = filepath.Join(s.state, "tmp-"+strconv.FormatUint(n, 10))
		tmp = c.Tmp
	}
	sock := ""
	if c.Network == NetworkHosts {
		var err error
		if sock, err = s.hosts(kind, &c, p.Hosts); err != nil {
			return c, err
		}
	}
	c.Env = commandEnv(p, tmp, c.ProxyPort)
	if kind == KindBwrap {
		c.Bwrap = s.bwrap
		c.BwrapArgs = bwrapArgs(s.self, p, sock)
	}
	return c, nil
}

// hosts starts (or reuses) the proxy for hosts, points c at it and returns
// the proxy's unix socket.
func (s *Sandbox) hosts(kind string, c *config, hosts []string) (string, error) {
	if kind == KindLandlock && s.landlockABI < 4 {
		return "", fmt.Errorf("%w: Landlock ABI %d cannot confine TCP (network %q needs ABI 4)", ErrUnavailable, s.landlockABI, NetworkHosts)
	}
	px, err := s.proxy(hosts)
	if err != nil {
		return "", err
	}
	c.ProxyPort = px.Port()
	if kind == KindBwrap {
		c.ProxySocket, c.ProxyPort = innerProxy, innerProxyPort
	}
	return px.Socket(), nil
}

// proxy returns the running proxy for exactly hosts, starting it once.
func (s *Sandbox) proxy(hosts []string) (*Proxy, error) {
	key := strings.Join(normalHosts(hosts), ",")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proxies == nil {
		return nil, errors.New("sandbox: closed")
	}
	if px := s.proxies[key]; px != nil {
		return px, nil
	}
	sock := filepath.Join(s.state, "proxy-"+strconv.Itoa(len(s.proxies))+".sock")
	px, err := NewProxy(hosts, sock)
	if err != nil {
		return nil, err
	}
	s.proxies[key] = px
	return px, nil
}

// commandEnv is argv's environment: p.Env, then PATH (unless p.Env has
// one), HOME, TMPDIR and, with a proxy, the proxy variables.
func commandEnv(p Policy, tmp string, proxyPort int) []string {
	env := append([]string(nil), p.Env...)
	hasPath := false
	for _, kv := range env {
		hasPath = hasPath || strings.HasPrefix(kv, "PATH=")
	}
	if !hasPath {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
	}
	env = append(env, "HOME="+p.Workspace, "TMPDIR="+tmp)
	if proxyPort != 0 {
		u := "http://127.0.0.1:" + strconv.Itoa(proxyPort)
		for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"} {
			env = append(env, k+"="+u)
		}
		env = append(env, "NO_PROXY=", "no_proxy=")
	}
	return env
}

// underSystemDir reports whether path is inside one of the system
// directories a sandbox sees.
func underSystemDir(path string) bool {
	for _, d := range systemDirs {
		if strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// enforceable refuses a process limit this host cannot enforce: root
// ignores RLIMIT_NPROC, so for root only a pids cgroup bounds processes.
func (s *Sandbox) enforceable(l Limits) error {
	if l.Processes == 0 || os.Geteuid() != 0 {
		return nil
	}
	for _, d := range s.cgroups {
		if strings.HasPrefix(d, "/sys/fs/cgroup/pids/") {
			return nil
		}
	}
	return fmt.Errorf("%w: cannot limit processes to %d: the node runs as root, which RLIMIT_NPROC does not bound, "+
		"and no cgroup v1 pids controller is writable", ErrUnavailable, l.Processes)
}
