package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/agentcapsule/capsule/sandbox"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/mcp"
)

// servers holds the test servers of testdata/, built once per test binary.
var servers struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	if code := sandbox.Main(os.Args[1:]); code >= 0 { // the sandbox re-executes this binary
		os.Exit(code)
	}
	code := m.Run()
	if servers.dir != "" {
		os.RemoveAll(servers.dir)
	}
	os.Exit(code)
}

// binary returns the path of the test server name (a directory of
// testdata/), building all of them the first time.
func binary(t testing.TB, name string) string {
	t.Helper()
	servers.once.Do(func() {
		if servers.dir, servers.err = os.MkdirTemp("", "mcp-servers-"); servers.err != nil {
			return
		}
		for _, s := range []string{"counter", "crasher", "hanger"} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(servers.dir, s), "./testdata/"+s).CombinedOutput()
			if err != nil {
				servers.err = fmt.Errorf("build %s: %v\n%s", s, err, out)
				return
			}
		}
	})
	if servers.err != nil {
		t.Fatal(servers.err)
	}
	return filepath.Join(servers.dir, name)
}

// stdio is the spec of a stdio server running the test server bin.
func stdio(t testing.TB, name, bin string, env map[string]string) envspec.Tool {
	return envspec.Tool{Name: name, Transport: "stdio", Command: binary(t, bin), Env: env,
		Effect: envspec.EffectExternal, Approval: envspec.ApprovalRequired}
}

// launches records the processes a Set started.
type launches struct {
	mu   sync.Mutex
	cmds []*exec.Cmd
}

func (l *launches) launch(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
	cmd, err := mcp.Exec(ctx, argv, env, dir)
	if err == nil {
		l.mu.Lock()
		l.cmds = append(l.cmds, cmd)
		l.mu.Unlock()
	}
	return cmd, err
}

// pids returns the PIDs of the processes started so far.
func (l *launches) pids() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, c := range l.cmds {
		if c.Process != nil {
			out = append(out, c.Process.Pid)
		}
	}
	return out
}

// start starts a Set on servers, recording its processes, and closes it
// when the test ends.
func start(t *testing.T, cfg mcp.Config) (*mcp.Set, *launches) {
	t.Helper()
	l := &launches{}
	cfg.Launch = l.launch
	s, err := mcp.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, l
}

// alive reports whether pid is still a live process after giving a
// SIGKILL already sent up to 5 s to take effect (the kernel ends a killed
// process asynchronously).
func alive(pid int) bool {
	for i := 0; i < 500 && running(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	return running(pid)
}

// running reports whether pid is a process that has not died (a zombie
// nobody reaped yet has died).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// hangerPIDs reads the PIDs the hanger wrote: its own and its child's, per start.
func hangerPIDs(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// lines counts the lines of the file at path (0 when it does not exist).
func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}
