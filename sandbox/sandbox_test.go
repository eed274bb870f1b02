//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyCheck(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range []struct {
		name string
		p    Policy
		want string // "" when valid
	}{
		{"minimal", Policy{Workspace: ws}, ""},
		{"hosts", Policy{Workspace: ws, Network: NetworkHosts, Hosts: []string{"api.github.com:443"}}, ""},
		{"relative workspace", Policy{Workspace: "ws"}, "not a clean absolute path"},
		{"unclean workspace", Policy{Workspace: ws + "/../x"}, "not a clean absolute path"},
		{"root workspace", Policy{Workspace: "/"}, "cannot be /"},
		{"hosts without network", Policy{Workspace: ws, Hosts: []string{"a.example:443"}}, "need network"},
		{"host without port", Policy{Workspace: ws, Network: NetworkHosts, Hosts: []string{"a.example"}}, "a.example"},
		{"unknown network", Policy{Workspace: ws, Network: "full"}, `network "full"`},
		{"negative limit", Policy{Workspace: ws, Limits: Limits{Processes: -1}}, "negative limit"},
	} {
		err := tc.p.check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want ErrPolicy saying %q", tc.name, err, tc.want)
		}
	}
}

// With no sandbox, Command refuses with the probe's reason and nothing
// runs; an Unsandboxed policy runs.
func TestUnavailable(t *testing.T) {
	s, err := probe("", "no-such-kind")
	must(t, err)
	defer s.Close()
	if s.Kind() != KindNone || !strings.Contains(s.Reason(), "no-such-kind") {
		t.Fatalf("kind %q, reason %q", s.Kind(), s.Reason())
	}
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran")
	if _, err := s.Command(context.Background(), Policy{Workspace: ws}, []string{"touch", marker}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Command: %v, want ErrUnavailable", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran")
	}
	o := sh(t, s, Policy{Workspace: ws, Unsandboxed: true}, "touch ran; echo $HOME")
	if _, err := os.Stat(marker); err != nil || strings.TrimSpace(o.stdout) != ws {
		t.Errorf("unsandboxed: %+v, %v", o, err)
	}
}

// The environment is the policy's plus PATH, HOME and TMPDIR; nothing of
// the node's own environment leaks in.
func TestEnvironment(t *testing.T) {
	t.Setenv("CAPSULE_NODE_SECRET", "leaked")
	for kind, s := range sandboxes(t) {
		ws := t.TempDir()
		o := sh(t, s, Policy{Workspace: ws, Env: []string{"LANG=C.UTF-8"}}, "env | sort")
		got := strings.Fields(o.stdout)
		want := []string{"HOME=" + ws, "LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "PWD=" + ws}
		for _, w := range want {
			if !strings.Contains(o.stdout, w+"\n") {
				t.Errorf("%s: env lacks %s:\n%s", kind, w, o.stdout)
			}
		}
		if strings.Contains(o.stdout, "leaked") || strings.Contains(o.stdout, configEnv) || len(got) > len(want)+2 {
			t.Errorf("%s: env has more than it should:\n%s", kind, o.stdout)
		}
	}
}

// The direct path's cgroups are reused once their command is done: they do
// not pile up on a node that runs many commands, and a reused one carries
// the new command's limits, not the last one's.
func TestDirectCgroupsReused(t *testing.T) {
	s, ok := sandboxes(t)[KindBwrap]
	if !ok || len(s.cgroups) == 0 || s.prlimit == "" {
		t.Skip("no bwrap with writable cgroups here")
	}
	ws := t.TempDir()
	for range 4 {
		sh(t, s, Policy{Workspace: ws, Limits: Limits{Processes: 8}}, "true")
	}
	o := sh(t, s, Policy{Workspace: ws}, "i=0; while [ $i -lt 20 ]; do sleep 1 & i=$((i+1)); done; echo all-forked")
	if !strings.Contains(o.stdout, "all-forked") {
		t.Errorf("a reused cgroup kept the last command's process limit: %+v", o)
	}
	entries, err := os.ReadDir(s.cgroups[0])
	must(t, err)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) != 1 {
		t.Errorf("cgroups in %s: %v, want the one reused", s.cgroups[0], dirs)
	}
}

// A process limit the host cannot enforce is refused, never ignored: root
// is not bound by RLIMIT_NPROC, so without a pids cgroup there is none.
func TestProcessLimitUnenforceable(t *testing.T) {
	for kind, s := range sandboxes(t) {
		saved := s.cgroups
		s.cgroups = nil
		_, err := s.Command(context.Background(), Policy{Workspace: t.TempDir(), Limits: Limits{Processes: 4}}, []string{"true"})
		s.cgroups = saved
		if os.Geteuid() == 0 && !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s as root without a pids cgroup: %v, want ErrUnavailable", kind, err)
		}
		if os.Geteuid() != 0 && err != nil {
			t.Errorf("%s: %v (RLIMIT_NPROC bounds a user that is not root)", kind, err)
		}
	}
}

// A probe removes the empty cgroups a killed node's sandbox left behind.
func TestSweepStaleCgroups(t *testing.T) {
	s := sandboxes(t)[KindLandlock]
	if s == nil || len(s.cgroups) == 0 {
		t.Skip("no writable cgroups here")
	}
	stale := filepath.Join(filepath.Dir(s.cgroups[0]), "capsule-sandbox-999999999-1")
	must(t, os.MkdirAll(filepath.Join(stale, "7"), 0o700))
	t.Cleanup(func() { os.Remove(filepath.Join(stale, "7")); os.Remove(stale) })
	s2, err := probe("", KindLandlock)
	must(t, err)
	s2.Close()
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("%s is still there", stale)
	}
}
