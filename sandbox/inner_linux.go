package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inner is the second stage, already inside bwrap's namespaces (or, in
// landlock and none modes, the supervisor's child). With network "hosts"
// under bwrap it forwards 127.0.0.1:innerProxyPort to the proxy's socket
// and runs the exec stage as its child; otherwise it is the exec stage.
func inner(c config) int {
	if c.Kind != KindBwrap || c.Network != NetworkHosts {
		return execStage(c)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", innerProxyPort))
	if err != nil {
		return setupFailed(fmt.Errorf("proxy forwarder: %w", err))
	}
	go forward(ln, c.ProxySocket)
	env, err := c.envValue()
	if err != nil {
		return setupFailed(err)
	}
	cmd := exec.Command("/proc/self/exe", Verb, stageExec)
	cmd.Env = append(append([]string(nil), c.Env...), env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	for _, fd := range c.CgroupFDs {
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(fd), "cgroup.procs"))
	}
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		return exitAs(ws.ExitStatus(), signalOf(ws))
	}
	return setupFailed(err)
}

func signalOf(ws syscall.WaitStatus) syscall.Signal {
	if ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// forward copies every connection accepted on ln to a new connection to
// the unix socket sock, both ways.
func forward(ln net.Listener, sock string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("unix", sock)
			if err != nil {
				return
			}
			defer u.Close()
			pipe(c, u)
		}()
	}
}

// execStage is the last stage: it joins the command's cgroups, sets the
// resource limits, confines the process (landlock mode: Landlock, dropped
// capabilities and seccomp; bwrap mode: seccomp) and executes argv.
func execStage(c config) int {
	for _, fd := range c.CgroupFDs {
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			return setupFailed(fmt.Errorf("join cgroup: %w", err))
		}
		unix.Close(fd)
	}
	if err := os.Chdir(c.Workspace); err != nil {
		return setupFailed(fmt.Errorf("workspace: %w", err))
	}
	if err := confine(c); err != nil {
		return setupFailed(err)
	}
	path, err := lookPath(c.Argv[0], c.Env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s%v\n", MarkerPrefix, err)
		return 127
	}
	if c.Prlimit != "" { // prlimit sets the limits and executes argv
		c.Argv = append(append(append([]string{c.Prlimit}, prlimitFlags(c.Limits)...), "--", path), c.Argv[1:]...)
		path, c.Limits = c.Prlimit, Limits{}
	}
	argv, err := syscall.SlicePtrFromStrings(c.Argv)
	if err != nil {
		return setupFailed(err)
	}
	envv, err := syscall.SlicePtrFromStrings(c.Env)
	if err != nil {
		return setupFailed(err)
	}
	pathp, err := syscall.BytePtrFromString(path)
	if err != nil {
		return setupFailed(err)
	}
	// Without prlimit the limits come last: RLIMIT_AS may be below this Go
	// process's own address space, so nothing should allocate after it.
	if err := setRlimits(c.Limits); err != nil {
		return setupFailed(err)
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	err = errno
	fmt.Fprintf(os.Stderr, "%sexec %s: %v\n", MarkerPrefix, c.Argv[0], err)
	return 126
}

// lookPath finds name in the PATH of env.
func lookPath(name string, env []string) (string, error) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			os.Setenv("PATH", v)
		}
	}
	return exec.LookPath(name)
}

// setRlimits sets the per-process limits l asks for.
func setRlimits(l Limits) error {
	set := func(res int, v uint64) error {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", res, err)
		}
		return nil
	}
	if l.Processes > 0 {
		if err := set(unix.RLIMIT_NPROC, uint64(l.Processes)); err != nil {
			return err
		}
	}
	if l.MemoryMB > 0 {
		if err := set(unix.RLIMIT_AS, uint64(l.MemoryMB)<<20); err != nil {
			return err
		}
	}
	if l.DiskMB > 0 {
		if err := set(unix.RLIMIT_FSIZE, uint64(l.DiskMB)<<20); err != nil {
			return err
		}
	}
	if l.Wall > 0 {
		return set(unix.RLIMIT_CPU, uint64(l.Wall.Seconds())+1)
	}
	return nil
}
