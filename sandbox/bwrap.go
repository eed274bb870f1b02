package sandbox

import (
	"os"
	"strconv"
)

// systemDirs are the directories a sandboxed command may read (and
// execute from); nothing else outside its workspace and private /tmp.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"}

// defaultTmpMB is the size of a bwrap sandbox's /tmp when Limits.DiskMB is
// zero.
const defaultTmpMB = 256

// bwrapArgs are bwrap's options for p, up to "--": every namespace
// unshared, the system directories read-only, the workspace read-write at
// its own path, a private /tmp, /dev and /proc of the sandbox, the init
// binary (unless self is empty: bwrap then runs argv itself) and, with a
// proxy, its socket. Nothing else of the host is there:
// not /root, /home, /tmp, the node's data folder or another workspace.
func bwrapArgs(self string, p Policy, proxySocket string) []string {
	a := []string{"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	tmpMB := p.Limits.DiskMB
	if tmpMB == 0 {
		tmpMB = defaultTmpMB
	}
	a = append(a, "--dev", "/dev", "--proc", "/proc",
		"--size", strconv.FormatInt(int64(tmpMB)<<20, 10), "--tmpfs", "/tmp",
		"--bind", p.Workspace, p.Workspace, "--chdir", p.Workspace)
	if self != "" {
		a = append(a, "--ro-bind", self, innerInit)
	}
	if proxySocket != "" {
		a = append(a, "--bind", proxySocket, innerProxy)
	}
	return a
}
