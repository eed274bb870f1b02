package sandbox

import (
	"errors"
	"fmt"
	"os"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// confine applies the confinement of c.Kind to this process; it is inherited
// by argv after execve.
func confine(c config) error {
	switch c.Kind {
	case KindLandlock:
		if err := dropCapabilities(); err != nil {
			return err
		}
		if err := restrictLandlock(c); err != nil {
			return err
		}
		return loadSeccomp(c)
	case KindBwrap:
		return loadSeccomp(c)
	}
	return nil
}

// restrictLandlock allows reading the system directories, reading and
// writing the workspace and the private tmp directory and, with network
// "hosts", TCP connections to the proxy's port only.
func restrictLandlock(c config) error {
	rules := []landlock.Rule{
		landlock.RODirs(systemDirs...).IgnoreIfMissing(),
		landlock.RWDirs(c.Workspace, c.Tmp).WithRefer(),
		landlock.RWFiles("/dev/null"),
		landlock.ROFiles("/dev/zero", "/dev/urandom", "/dev/random").IgnoreIfMissing(),
	}
	if c.Network == NetworkHosts {
		rules = append(rules, landlock.ConnectTCP(uint16(c.ProxyPort)))
	}
	if err := landlock.V7.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// dropCapabilities empties the bounding set, so that a root process keeps
// no capability across execve (Landlock confines files, not capabilities).
// Another user has none to keep (and may not change the set).
func dropCapabilities() error {
	if os.Geteuid() != 0 {
		return nil
	}
	for cap := 0; cap < 64; cap++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(cap), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break
		}
		if err != nil {
			return fmt.Errorf("drop capability %d: %w", cap, err)
		}
	}
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	return nil
}

// errEPERM is the seccomp action that fails a system call with EPERM.
const errEPERM = seccomp.ActionErrno | seccomp.Action(unix.EPERM)

// seccompFilter refuses the kernel keyring (the node's secret store) and
// io_uring (which would bypass this filter) in every mode and, in landlock
// mode, sockets: every socket with network "none", every socket but
// AF_INET/AF_INET6 streams with network "hosts" (Landlock then allows only
// connections to the proxy). A bwrap sandbox has its own network namespace.
func seccompFilter(c config) seccomp.Filter {
	groups := []seccomp.SyscallGroup{{Action: errEPERM, Names: []string{
		"keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter", "io_uring_register"}}}
	if c.Kind == KindLandlock && c.Network == NetworkHosts {
		groups = append(groups, seccomp.SyscallGroup{Action: errEPERM, NamesWithCondtions: []seccomp.NameWithConditions{
			{Name: "socket", Conditions: seccomp.ArgumentConditions{
				{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET},
				{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET6}}},
			{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.BitsSet, Value: 2}}},
			{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.BitsSet, Value: 4}}},
		}})
	} else if c.Kind == KindLandlock {
		groups = append(groups, seccomp.SyscallGroup{Action: errEPERM, Names: []string{"socket"}})
	}
	return seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}}
}

func loadSeccomp(c config) error {
	if err := seccomp.LoadFilter(seccompFilter(c)); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// landlockABI returns the kernel's Landlock ABI version, or an error when
// Landlock or seccomp is not available.
func landlockABI() (int, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("landlock: %w", err)
	}
	if abi < 1 {
		return 0, errors.New("landlock: not enabled in this kernel")
	}
	if !seccomp.Supported() {
		return 0, errors.New("seccomp: not supported by this kernel")
	}
	return abi, nil
}
