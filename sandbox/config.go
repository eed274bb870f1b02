package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
)

// Verb is the hidden first argument with which the capsule binary (or a
// test binary, from TestMain) re-executes itself as the sandbox's init; Main
// runs it.
const Verb = "__sandbox"

// The stages of the init, the argument after Verb.
const (
	stageSupervise = "supervise" // outside: cgroups, wall time, output cap, clean-up
	stageInner     = "inner"     // inside bwrap, or the landlock child: forwarder, then exec
	stageExec      = "exec"      // the last step before argv: join cgroups, limits, confine, execve
)

// Exit statuses of a sandboxed command that the sandbox itself chose; each
// comes with a line on the command's stderr starting with MarkerPrefix.
const (
	// ExitSetup: the sandbox could not be set up; argv did not run.
	ExitSetup = 123
	// ExitWallTime: Limits.Wall was reached and the tree was killed.
	ExitWallTime = 124
	// ExitOutput: Limits.OutputBytes was reached and the tree was killed.
	ExitOutput = 125
)

// MarkerPrefix starts the line the sandbox writes on the command's stderr
// when it ends the command itself (ExitSetup, ExitWallTime, ExitOutput).
const MarkerPrefix = "capsule-sandbox: "

// configEnv names the environment variable that carries the init's
// configuration; the init removes it before argv runs. It is not in argv,
// because argv is readable by every user through /proc.
const configEnv = "CAPSULE_SANDBOX_CONFIG"

// Paths inside a bwrap sandbox.
const (
	innerInit  = "/run/capsule/init"
	innerProxy = "/run/capsule/proxy.sock"
	// innerProxyPort is where the inner init forwards to the proxy socket.
	innerProxyPort = 3128
)

// config is what the init stages read: everything decided by Command.
type config struct {
	Kind      string   `json:"kind"` // bwrap, landlock or none
	Argv      []string `json:"argv"`
	Env       []string `json:"env"` // argv's environment
	Workspace string   `json:"workspace"`
	Limits    Limits   `json:"limits"`
	Network   string   `json:"network"`
	// ProxyPort is the port the command reaches the proxy on (loopback).
	ProxyPort int `json:"proxy_port,omitempty"`
	// ProxySocket is the proxy's unix socket (bwrap mode, inside path).
	ProxySocket string `json:"proxy_socket,omitempty"`
	// Bwrap is the bwrap binary and BwrapArgs its options up to "--".
	Bwrap     string   `json:"bwrap,omitempty"`
	BwrapArgs []string `json:"bwrap_args,omitempty"`
	// Self is the init binary, as the supervisor runs it.
	Self string `json:"self"`
	// Tmp is the private temporary directory the supervisor creates
	// (landlock and none modes) and removes.
	Tmp string `json:"tmp,omitempty"`
	// Cgroups are the per-command cgroup directories the supervisor creates,
	// limits and removes; CgroupFDs the descriptors (in the exec stage) of
	// their cgroup.procs files, which the exec stage joins.
	Cgroups   []string `json:"cgroups,omitempty"`
	CgroupFDs []int    `json:"cgroup_fds,omitempty"`
	// Prlimit is util-linux prlimit, which the exec stage runs to set the
	// rlimits (a Go process cannot lower RLIMIT_AS below its own address
	// space safely: its runtime may map memory at any time); "" when the
	// host has none, and the exec stage sets them itself.
	Prlimit string `json:"prlimit,omitempty"`
	// LandlockABI is the kernel's Landlock ABI found by the probe.
	LandlockABI int `json:"landlock_abi,omitempty"`
}

// Main runs the init stage named by args (os.Args without the program
// name, starting with Verb) and returns the exit status; it returns -1 when
// args do not start with Verb. The capsule binary calls it before parsing
// flags; tests call it from TestMain.
func Main(args []string) int {
	if len(args) < 2 || args[0] != Verb {
		return -1
	}
	c, err := readConfig()
	if err != nil {
		return setupFailed(err)
	}
	switch args[1] {
	case stageSupervise:
		return supervise(c)
	case stageInner:
		return inner(c)
	case stageExec:
		return execStage(c)
	}
	return setupFailed(fmt.Errorf("unknown stage %q", args[1]))
}

func readConfig() (config, error) {
	var c config
	raw, ok := os.LookupEnv(configEnv)
	if !ok {
		return c, fmt.Errorf("sandbox: %s is not set", configEnv)
	}
	os.Unsetenv(configEnv)
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return c, fmt.Errorf("sandbox: read config: %w", err)
	}
	return c, nil
}

func (c config) envValue() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("sandbox: config: %w", err)
	}
	return configEnv + "=" + string(b), nil
}

// setupFailed reports err on stderr with the marker and returns ExitSetup.
func setupFailed(err error) int {
	fmt.Fprintf(os.Stderr, "%ssetup: %v\n", MarkerPrefix, err)
	return ExitSetup
}
