package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/internal/nodeproc"
	"github.com/agentcapsule/capsule/ui"
)

// bin is the folder of the binaries built once for the package: capsule
// and the counter MCP server (mcp/testdata/counter). Its name must not
// look random: the spec's credential check would take it for a key.
var bin string

func TestMain(m *testing.M) {
	if !shortFlag() {
		bin = filepath.Join(os.TempDir(), fmt.Sprintf("capsule-ui-browser-%d", os.Getpid()))
		if err := build(bin); err != nil {
			fmt.Fprintln(os.Stderr, "browser:", err)
			os.RemoveAll(bin)
			os.Exit(1)
		}
	}
	code := m.Run()
	if bin != "" {
		os.RemoveAll(bin)
	}
	os.Exit(code)
}

// shortFlag reports -short before flag parsing of the tests is done.
func shortFlag() bool {
	for _, a := range os.Args[1:] {
		if a == "-test.short" || a == "-test.short=true" {
			return true
		}
	}
	return false
}

func build(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	for pkg, out := range map[string]string{"github.com/agentcapsule/capsule/cmd/capsule": "capsule", "../../mcp/testdata/counter": "counter"} {
		cmd := exec.Command(goBin, "build", "-o", filepath.Join(dir, out), pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", pkg, err)
		}
	}
	return nil
}

// cli runs capsule with args and returns its standard output.
func cli(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "capsule"), args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("capsule %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return string(out)
}

// nodeProc is one `capsule node --ui` process.
type nodeProc struct {
	name, dir, log string
	id, listen     string
	ui             string // the web view's address
	proc           *nodeproc.Proc
}

func (n *nodeProc) client() *api.LocalClient {
	return api.NewLocalClient(filepath.Join(n.dir, "node.sock"))
}

// loginURL is what `capsule ui open` prints for n.
func (n *nodeProc) loginURL(t *testing.T) string {
	return strings.TrimSpace(cli(t, "ui", "open", "--data", n.dir))
}

// startNode runs a node with the web view on loopback and the simulator
// as its model endpoint.
func startNode(t *testing.T, root, name, sim string) *nodeProc {
	t.Helper()
	n := &nodeProc{name: name, dir: filepath.Join(root, name), log: filepath.Join(root, name+".log")}
	n.id = strings.TrimSpace(cli(t, "node", "id", "--data", n.dir))
	p, err := nodeproc.Start(nodeproc.Config{Bin: filepath.Join(bin, "capsule"), Data: n.dir, Listen: "127.0.0.1:0", ID: n.id, Log: n.log,
		Args: []string{"--model-endpoint", sim, "--allow-unsandboxed", "--step-interval", "20ms", "--ui", "127.0.0.1:0"}, Wait: 30 * time.Second})
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, tail(n.log))
	}
	t.Cleanup(func() { _ = p.Cmd.Process.Kill(); <-p.Exited })
	n.proc, n.listen = p, p.Listen
	if n.ui, err = ui.ReadAddr(n.dir); err != nil {
		t.Fatal(err)
	}
	return n
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// startSim runs `capsule model serve` until the test ends and returns its URL.
func startSim(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "capsule"), "model", "serve", "--listen", "127.0.0.1:0", "--json")
	nodeproc.DieWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var line struct{ URL string }
	if err := json.NewDecoder(out).Decode(&line); err != nil || line.URL == "" {
		t.Fatalf("capsule model serve: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return line.URL
}
