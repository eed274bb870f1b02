package sandbox

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"
)

// The values of Policy.Network.
const (
	NetworkNone  = "none"
	NetworkHosts = "hosts"
)

// Limits bound one sandboxed command. A zero field is no limit; the caller
// (the node) fills in its defaults.
type Limits struct {
	// Wall is the longest the command may run, counted from Command; then
	// the whole tree is killed: through the capsule init the command exits
	// with ExitWallTime, on bwrap's direct path it dies of SIGKILL. A
	// caller that must tell a timeout apart keeps its own deadline (as the
	// run tool does).
	Wall time.Duration
	// OutputBytes caps stdout and stderr together; past it the tree is
	// killed and the command exits with ExitOutput. It needs the capsule
	// init (the slower path); the run tool caps its output itself.
	OutputBytes int64
	// Processes caps the processes the command may have at once (a pids
	// cgroup when one is writable, and RLIMIT_NPROC).
	Processes int
	// MemoryMB caps the address space of each process (RLIMIT_AS) and the
	// memory of the whole tree (a memory cgroup when one is writable).
	MemoryMB int
	// DiskMB caps the size of every file the command writes (RLIMIT_FSIZE)
	// and the size of its private /tmp.
	DiskMB int
}

// Policy says what one sandboxed command may reach.
type Policy struct {
	// Workspace is the absolute path of the only directory the command may
	// write (and the only one outside the system directories it may read);
	// the command starts in it, and HOME is it.
	Workspace string
	// Env is the command's environment, "NAME=value" each; PATH, HOME and
	// TMPDIR are set by the sandbox unless Env sets PATH.
	Env []string
	// Network is NetworkNone (the default when empty) or NetworkHosts.
	Network string
	// Hosts are the "host:port" the command may reach through the egress
	// proxy when Network is NetworkHosts.
	Hosts []string
	// Limits bound the command.
	Limits Limits
	// Unsandboxed runs the command without isolation (limits still apply).
	// The caller sets it only when the environment spec says
	// `sandbox: none` and the node was started with --allow-unsandboxed.
	Unsandboxed bool
}

// ErrPolicy is wrapped by every error about a Policy that is malformed.
var ErrPolicy = errors.New("sandbox: invalid policy")

// check returns an error wrapping ErrPolicy when p is malformed.
func (p Policy) check() error {
	if !filepath.IsAbs(p.Workspace) || filepath.Clean(p.Workspace) != p.Workspace {
		return fmt.Errorf("%w: workspace %q is not a clean absolute path", ErrPolicy, p.Workspace)
	}
	if p.Workspace == "/" {
		return fmt.Errorf("%w: the workspace cannot be /", ErrPolicy)
	}
	switch p.network() {
	case NetworkNone:
		if len(p.Hosts) > 0 {
			return fmt.Errorf("%w: hosts %v need network %q", ErrPolicy, p.Hosts, NetworkHosts)
		}
	case NetworkHosts:
		for _, h := range p.Hosts {
			if _, err := splitHost(h); err != nil {
				return fmt.Errorf("%w: %v", ErrPolicy, err)
			}
		}
	default:
		return fmt.Errorf("%w: network %q is neither %q nor %q", ErrPolicy, p.Network, NetworkNone, NetworkHosts)
	}
	l := p.Limits
	if l.Wall < 0 || l.OutputBytes < 0 || l.Processes < 0 || l.MemoryMB < 0 || l.DiskMB < 0 {
		return fmt.Errorf("%w: negative limit in %+v", ErrPolicy, l)
	}
	return nil
}

func (p Policy) network() string {
	if p.Network == "" {
		return NetworkNone
	}
	return p.Network
}

// splitHost checks a "host:port" and returns its port.
func splitHost(h string) (int, error) {
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		return 0, fmt.Errorf("host %q: %v", h, err)
	}
	n, err := strconv.Atoi(port)
	if host == "" || err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("host %q is not host:port", h)
	}
	return n, nil
}
