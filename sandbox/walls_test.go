//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sandboxes returns a Sandbox of every kind that works on this host, each
// probed as Probe does with ForceEnv set to it; bwrap twice, by its direct
// path and through the capsule init.
func sandboxes(t *testing.T) map[string]*Sandbox {
	t.Helper()
	out := map[string]*Sandbox{}
	for _, k := range []string{KindBwrap, KindLandlock} {
		s, err := probe("", k)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if s.Kind() != k {
			t.Logf("no %s sandbox here: %s", k, s.Reason())
			continue
		}
		out[k] = s
		if k == KindBwrap && s.prlimit != "" {
			// The same sandbox with the capsule init in it (the path of
			// network hosts and output limits), for every wall.
			s2, err := probe("", k)
			must(t, err)
			t.Cleanup(func() { s2.Close() })
			s2.prlimit = ""
			out[k+"+init"] = s2
		}
	}
	if len(out) == 0 {
		t.Fatal("no sandbox works on this host")
	}
	return out
}

// outcome is what one command did.
type outcome struct {
	stdout, stderr string
	exit           int // -1 when killed by a signal
}

// sh runs script with /bin/sh -c under p in s.
func sh(t *testing.T, s *Sandbox, p Policy, script string) outcome {
	t.Helper()
	o, err := trySh(t, s, p, script)
	if err != nil {
		t.Fatalf("Command: %v", err)
	}
	return o
}

// trySh is sh, returning Command's error.
func trySh(t *testing.T, s *Sandbox, p Policy, script string) (outcome, error) {
	t.Helper()
	cmd, err := s.Command(context.Background(), p, []string{"/bin/sh", "-c", script})
	if err != nil {
		return outcome{}, err
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	s.Release(cmd)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %q: %v", script, err)
	}
	return outcome{o.String(), e.String(), cmd.ProcessState.ExitCode()}, nil
}

// world is a node's files around one agent's workspace: secrets the agent
// must not read and places it must not write.
type world struct {
	root, ws          string
	sshKey, nodeKey   string // fake keys outside the workspace
	otherWS, realHome string // another agent's file; a file in the real $HOME
	outside, nodeDir  string // paths to try writing
	keyring           string // a secret's description in the user's kernel keyring
	listener          net.Listener
	accepted          *atomic.Int32
}

const secret = "SECRET-c0ffee"

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{root: root, ws: filepath.Join(root, "agents", "a", "workspace"),
		sshKey: filepath.Join(root, "home", ".ssh", "id_ed25519"), nodeKey: filepath.Join(root, "node", "keys", "node.key"),
		otherWS: filepath.Join(root, "agents", "b", "workspace", "notes.txt"), outside: filepath.Join(root, "outside.txt"),
		nodeDir: filepath.Join(root, "node", "keys", "planted"), accepted: new(atomic.Int32)}
	for _, f := range []string{w.sshKey, w.nodeKey, w.otherWS} {
		must(t, os.MkdirAll(filepath.Dir(f), 0o700))
		must(t, os.WriteFile(f, []byte(secret+"\n"), 0o600))
	}
	must(t, os.MkdirAll(w.ws, 0o755))
	home, err := os.UserHomeDir()
	must(t, err)
	f, err := os.CreateTemp(home, ".capsule-sandbox-test-")
	must(t, err)
	f.WriteString(secret + "\n")
	f.Close()
	w.realHome = f.Name()
	t.Cleanup(func() { os.Remove(w.realHome) })
	w.keyring = "capsule:sandbox-test-" + filepath.Base(root)
	id, err := unix.AddKey("user", w.keyring, []byte(secret), unix.KEY_SPEC_USER_KEYRING)
	must(t, err)
	t.Cleanup(func() { unix.KeyctlInt(unix.KEYCTL_REVOKE, id, 0, 0, 0) })
	w.listener, err = net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { w.listener.Close() })
	go func() {
		for {
			c, err := w.listener.Accept()
			if err != nil {
				return
			}
			w.accepted.Add(1)
			c.Write([]byte(secret + "\n"))
			c.Close()
		}
	}()
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wall is one thing a sandboxed command must not do. script tries it;
// breached says whether it got through. The same script runs once more
// without the wall (unsandboxed, or without the limit), where it must get
// through: so the test fails if the wall is removed.
type wall struct {
	name     string
	policy   func(w *world) Policy // the walled policy
	open     func(p Policy) Policy // the same policy without the wall
	script   func(w *world) string
	breached func(w *world, o outcome) bool
}

func unsandboxed(p Policy) Policy { p.Unsandboxed = true; return p }

func basePolicy(w *world) Policy { return Policy{Workspace: w.ws} }

func readSecret(path func(w *world) string) (func(*world) string, func(*world, outcome) bool) {
	return func(w *world) string { return "cat " + path(w) },
		func(w *world, o outcome) bool { return strings.Contains(o.stdout, secret) }
}

func writeFile(path func(w *world) string) (func(*world) string, func(*world, outcome) bool) {
	return func(w *world) string { return "echo planted > " + path(w) },
		func(w *world, o outcome) bool {
			_, err := os.Stat(path(w))
			os.Remove(path(w))
			return err == nil
		}
}

// keyringScript reads a key of the user keyring with keyctl(2)
// (KEYCTL_SEARCH, then KEYCTL_READ), as any program could.
const keyringScript = `exec perl -e '$t = "user"; $d = "%[2]s"; $id = syscall(%[1]d, 10, -4, $t, $d, 0);
die "search: $!\n" if $id < 0; $b = "\0" x 256; $n = syscall(%[1]d, 11, $id, $b, 256);
die "read: $!\n" if $n < 0; print substr($b, 0, $n)'`

var walls = func() []wall {
	var ws []wall
	for _, r := range []struct {
		name string
		path func(w *world) string
	}{
		{"read ~/.ssh/id_ed25519", func(w *world) string { return w.sshKey }},
		{"read the node key", func(w *world) string { return w.nodeKey }},
		{"read another agent's workspace", func(w *world) string { return w.otherWS }},
		{"read a file in the real $HOME", func(w *world) string { return w.realHome }},
	} {
		s, b := readSecret(r.path)
		ws = append(ws, wall{r.name, basePolicy, unsandboxed, s, b})
	}
	for _, r := range []struct {
		name string
		path func(w *world) string
	}{
		{"write outside the workspace", func(w *world) string { return w.outside }},
		{"write into the node's key folder", func(w *world) string { return w.nodeDir }},
	} {
		s, b := writeFile(r.path)
		ws = append(ws, wall{r.name, basePolicy, unsandboxed, s, b})
	}
	ws = append(ws, wall{"connect to a loopback port", basePolicy, unsandboxed,
		func(w *world) string {
			return fmt.Sprintf("exec bash -c 'cat < /dev/tcp/127.0.0.1/%d'", w.listener.Addr().(*net.TCPAddr).Port)
		},
		func(w *world, o outcome) bool { return w.accepted.Swap(0) > 0 || strings.Contains(o.stdout, secret) }})
	ws = append(ws, wall{"read the node's secret store (the kernel keyring)", basePolicy, unsandboxed,
		func(w *world) string { return fmt.Sprintf(keyringScript, unix.SYS_KEYCTL, w.keyring) },
		func(w *world, o outcome) bool { return strings.Contains(o.stdout, secret) }})
	ws = append(ws, limitWalls()...)
	return ws
}()

// limitWalls are the walls of Limits; their open policy is the same
// sandbox without the limit.
func limitWalls() []wall {
	with := func(l Limits) func(*world) Policy {
		return func(w *world) Policy { p := basePolicy(w); p.Limits = l; return p }
	}
	unlimited := func(p Policy) Policy { p.Limits = Limits{}; return p }
	return []wall{
		{"fork bomb stopped by the process limit", with(Limits{Processes: 16}), unlimited,
			func(*world) string {
				return "i=0; while [ $i -lt 64 ]; do sleep 2 & i=$((i+1)); done; echo all-forked"
			},
			func(w *world, o outcome) bool { return strings.Contains(o.stdout, "all-forked") }},
		{"allocate beyond the memory limit", with(Limits{MemoryMB: 64}), unlimited,
			func(*world) string { return "v=$(head -c 100000000 /dev/zero | tr '\\0' a); echo ${#v}" },
			func(w *world, o outcome) bool { return strings.Contains(o.stdout, "100000000") }},
		{"fill the workspace beyond the disk limit", with(Limits{DiskMB: 1}), unlimited,
			func(*world) string { return "head -c 3000000 /dev/zero > big; wc -c < big" },
			func(w *world, o outcome) bool { return fileSize(filepath.Join(w.ws, "big")) > 1<<20 }},
		{"fill /tmp beyond the disk limit", with(Limits{DiskMB: 1}), unlimited,
			func(*world) string { return "head -c 3000000 /dev/zero > $TMPDIR/big; wc -c < $TMPDIR/big" },
			func(w *world, o outcome) bool { return strings.TrimSpace(o.stdout) == "3000000" }},
		{"outlive the wall time", with(Limits{Wall: 300 * time.Millisecond}), unlimited,
			func(*world) string { return "sleep 2; echo still-here" },
			func(w *world, o outcome) bool {
				return strings.Contains(o.stdout, "still-here")
			}},
		{"write beyond the output cap", with(Limits{OutputBytes: 1000}), unlimited,
			func(*world) string { return "head -c 100000 /dev/zero | tr '\\0' a" },
			func(w *world, o outcome) bool { return len(o.stdout) > 1000 || o.exit != ExitOutput }},
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// TestWalls proves every wall from inside a sandboxed shell, for every
// kind of sandbox this host has, and that each script does get through
// when that wall is not there.
func TestWalls(t *testing.T) {
	for kind, s := range sandboxes(t) {
		for _, wl := range walls {
			t.Run(kind+"/"+wl.name, func(t *testing.T) {
				w := newWorld(t)
				p := wl.policy(w)
				o, err := trySh(t, s, p, wl.script(w))
				t.Logf("walled: exit %d, stderr %.200q", o.exit, o.stderr)
				switch {
				case errors.Is(err, ErrUnavailable): // fail closed: this host cannot enforce the wall
					t.Logf("refused: %v", err)
				case err != nil:
					t.Fatalf("Command: %v", err)
				case wl.breached(w, o):
					t.Errorf("breached inside the %s sandbox: exit %d\nstdout: %.300s\nstderr: %.300s", kind, o.exit, o.stdout, o.stderr)
				}
				if o := sh(t, s, wl.open(p), wl.script(w)); !wl.breached(w, o) {
					t.Errorf("the script does not get through even without the wall, so it proves nothing: exit %d\nstdout: %.300s\nstderr: %.300s",
						o.exit, o.stdout, o.stderr)
				}
			})
		}
	}
}
