package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroupRoot is where cgroup version 1 controllers are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// parents counts the sandboxes of this process, to name their cgroups.
var parents atomic.Int64

// cgroupParents returns, for the pids and memory controllers of cgroup
// version 1, a directory this sandbox may create cgroups in: a new
// "capsule-sandbox-PID-N" below the process's own cgroup. Controllers that
// are absent or not writable are left out.
func cgroupParents() []string {
	name := fmt.Sprintf("capsule-sandbox-%d-%d", os.Getpid(), parents.Add(1))
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || (parts[1] != "pids" && parts[1] != "memory") {
			continue
		}
		sweep(filepath.Join(cgroupRoot, parts[1], parts[2]))
		dir := filepath.Join(cgroupRoot, parts[1], parts[2], name)
		if err := os.Mkdir(dir, 0o700); err == nil {
			out = append(out, dir)
		}
	}
	return out
}

// cgroups are one command's cgroups, with their cgroup.procs files open
// for the exec stage to join.
type cgroups struct {
	dirs  []string
	procs []*os.File
}

// createCgroups creates dirs and sets the limits each controller enforces.
func createCgroups(dirs []string, l Limits) (*cgroups, error) {
	cg := &cgroups{}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			return cg, fmt.Errorf("cgroup: %w", err)
		}
		cg.dirs = append(cg.dirs, d)
		if err := setCgroupLimit(d, l); err != nil {
			return cg, err
		}
		f, err := os.OpenFile(filepath.Join(d, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			return cg, fmt.Errorf("cgroup: %w", err)
		}
		cg.procs = append(cg.procs, f)
	}
	return cg, nil
}

// setCgroupLimit writes the limit of dir's controller: l's, or none (a
// reused cgroup may hold an earlier command's).
func setCgroupLimit(dir string, l Limits) error {
	var file, value string
	switch controller(dir) {
	case "pids":
		file, value = "pids.max", "max"
		if l.Processes > 0 {
			value = itoa(int64(l.Processes))
		}
	case "memory":
		file, value = "memory.limit_in_bytes", "-1"
		if l.MemoryMB > 0 {
			value = itoa(int64(l.MemoryMB) << 20)
		}
	default:
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	return nil
}

// reopen sets l's limits on cg's existing directories and opens their
// cgroup.procs again.
func (cg *cgroups) reopen(l Limits) error {
	for _, d := range cg.dirs {
		if err := setCgroupLimit(d, l); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(d, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		cg.procs = append(cg.procs, f)
	}
	return nil
}

// empty reports whether no process is in cg.
func (cg *cgroups) empty() bool {
	for _, d := range cg.dirs {
		if len(readPids(filepath.Join(d, "cgroup.procs"))) > 0 {
			return false
		}
	}
	return true
}

// controller names the controller of a directory under cgroupRoot.
func controller(dir string) string {
	rel := strings.TrimPrefix(dir, cgroupRoot+"/")
	c, _, _ := strings.Cut(rel, "/")
	return c
}

// killAll kills every process in the cgroups until they are empty (or a
// second has passed).
func (cg *cgroups) killAll() {
	deadline := time.Now().Add(time.Second)
	for _, d := range cg.dirs {
		for time.Now().Before(deadline) {
			pids := readPids(filepath.Join(d, "cgroup.procs"))
			if len(pids) == 0 {
				break
			}
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// remove kills what is left and removes the cgroups.
func (cg *cgroups) remove() {
	for _, f := range cg.procs {
		f.Close()
	}
	cg.killAll()
	for _, d := range cg.dirs {
		for i := 0; i < 100 && os.Remove(d) != nil; i++ {
			time.Sleep(time.Millisecond) // a killed process leaves the cgroup soon
		}
	}
}

func readPids(path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// finished reports whether the command of cg has run and ended: its pids
// cgroup has had a process (pids.peak, Linux 6.1+) and has none now.
func (cg *cgroups) finished() bool {
	for _, d := range cg.dirs {
		if controller(d) != "pids" {
			continue
		}
		peak, err1 := os.ReadFile(filepath.Join(d, "pids.peak"))
		cur, err2 := os.ReadFile(filepath.Join(d, "pids.current"))
		return err1 == nil && err2 == nil && strings.TrimSpace(string(peak)) != "0" && strings.TrimSpace(string(cur)) == "0"
	}
	return false
}

// sweep removes the empty cgroups that sandboxes of processes no longer
// running left in parent (a node that was killed cannot clean up).
func sweep(parent string) {
	old, _ := filepath.Glob(filepath.Join(parent, "capsule-sandbox-*"))
	for _, d := range old {
		pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), "capsule-sandbox-"), "-")
		if _, err := os.Stat("/proc/" + pid); err == nil || pid == "" {
			continue // its process runs (or the name is not ours)
		}
		subs, _ := filepath.Glob(filepath.Join(d, "[0-9]*"))
		for _, sub := range subs {
			os.Remove(sub) // fails, and stays, while a process is in it
		}
		os.Remove(d)
	}
}
