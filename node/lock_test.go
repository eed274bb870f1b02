package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/vfs"
)

// TestSecondNodeRefused (issue 10 item 2, PROTOCOL §5): a second node of a
// data folder another node serves is refused, naming the first's ID, PID
// and listen address; the first node's socket survives, and its local API
// still answers. Once the first node closes, the folder can be served again.
func TestSecondNodeRefused(t *testing.T) {
	dir := t.TempDir()
	first, err := New(Config{Dir: dir, Listen: "127.0.0.1:0", StepInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Close(context.Background())
	_, err = New(Config{Dir: dir, Listen: "127.0.0.1:0"})
	var he *capsule.HeldError
	if !errors.As(err, &he) || he.Host.Node != string(first.ID()) || he.Host.PID != os.Getpid() || he.Host.Listen != first.Addr() {
		t.Fatalf("second node: %v, want a HeldError naming %s pid %d on %s", err, first.ID(), os.Getpid(), first.Addr())
	}
	want := fmt.Sprintf("data folder %s is in use by node %s (pid %d, listening on %s, socket %s, started %s): a data folder has one node; stop that node or use another folder",
		dir, first.ID(), os.Getpid(), first.Addr(), filepath.Join(dir, SocketFile), he.Host.Started)
	if err.Error() != want { // read once: no "node: capsule: held by another process: " before it
		t.Errorf("second node:\n got %q\nwant %q", err, want)
	}
	sock := filepath.Join(dir, SocketFile)
	info, err := api.NewLocalClient(sock).Info(context.Background())
	if err != nil || info.ID != string(first.ID()) {
		t.Fatalf("the first node's socket after the refused start: %+v, %v", info, err)
	}
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket after Close: %v, want it removed", err)
	}
	again, err := New(Config{Dir: dir, Socket: "-"})
	if err != nil {
		t.Fatalf("after the first node closed: %v", err)
	}
	again.Close(context.Background())
}

// TestSocketNotOursKept: a node removes at Close only the socket it
// created; a socket another process put at the path since stays.
func TestSocketNotOursKept(t *testing.T) {
	dir := t.TempDir()
	n, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, SocketFile)
	if err := os.Remove(sock); err != nil { // another process took the path over
		t.Fatal(err)
	}
	if err := os.WriteFile(sock, []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(sock); err != nil || string(b) != "theirs" {
		t.Errorf("another process's socket after Close: %q, %v; want it kept", b, err)
	}
}

// TestSecondNodeProcessRefused runs the first node in another process
// (this test binary again, TestNodeChild): the node of this process is
// refused naming the child's PID and address, the child's socket stays and
// answers; after the child is killed, this process serves the folder.
func TestSecondNodeProcessRefused(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(os.Args[0], "-test.run=^TestNodeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CAPSULE_NODE_CHILD_DIR="+dir, "CAPSULE_NODE_CHILD_READY="+ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var addr []byte
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			addr = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child node did not start")
		}
	}
	_, err := New(Config{Dir: dir, Listen: "127.0.0.1:0"})
	var he *capsule.HeldError
	if !errors.As(err, &he) || he.Host.PID != cmd.Process.Pid || he.Host.Listen != string(addr) {
		t.Fatalf("node beside the child's: %v, want a HeldError naming pid %d on %s", err, cmd.Process.Pid, addr)
	}
	t.Logf("refused: %v", err)
	sock := filepath.Join(dir, SocketFile)
	if _, err := api.NewLocalClient(sock).Info(context.Background()); err != nil {
		t.Fatalf("the child's socket after the refused start: %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	n, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatalf("after the child died: %v", err)
	}
	if err := n.Start(); err != nil { // the dead child's stale socket is replaced
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	if info, err := api.NewLocalClient(sock).Info(context.Background()); err != nil || info.ID != string(n.ID()) {
		t.Errorf("Info after taking over: %+v, %v", info, err)
	}
}

// TestNodeChild is the first node of TestSecondNodeProcessRefused.
func TestNodeChild(t *testing.T) {
	dir := os.Getenv("CAPSULE_NODE_CHILD_DIR")
	if dir == "" {
		t.Skip("run by TestSecondNodeProcessRefused")
	}
	n, err := New(Config{Dir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("CAPSULE_NODE_CHILD_READY"), []byte(n.Addr()), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute) // until killed
	t.Log("pid", strconv.Itoa(os.Getpid()))
}

// TestHostedCapsuleRefused (issue 10 item 5): while a node runs, another
// process's commit to the capsule of an agent it hosts (what `capsule env
// set` and `capsule snapshot` do) is refused naming the node, and the
// capsule's manifest is unchanged; once the node stopped, it succeeds.
func TestHostedCapsuleRefused(t *testing.T) {
	dir := t.TempDir()
	n, err := New(Config{Dir: dir, Listen: "127.0.0.1:0", Socket: "-", StepInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	st, err := n.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "x", Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	capDir := filepath.Join(dir, "agents", st.ID, "capsule")
	before, err := os.ReadFile(filepath.Join(capDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s is hosted by node %s (pid %d, %s): stop the node or use the capsule agent commands", capDir, n.ID(), os.Getpid(), n.Addr())
	if out := commitChild(t, capDir); out != want {
		t.Errorf("commit from another process while the node runs:\n got %q\nwant %q", out, want)
	}
	if after, _ := os.ReadFile(filepath.Join(capDir, "manifest.json")); string(after) != string(before) {
		t.Error("the refused commit changed the manifest")
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out := commitChild(t, capDir); out != "ok" {
		t.Errorf("commit from another process after the node stopped: %q", out)
	}
}

// TestCommitChild is the other process of TestHostedCapsuleRefused.
func TestCommitChild(t *testing.T) {
	dir := os.Getenv("CAPSULE_COMMIT_CHILD_DIR")
	if dir == "" {
		t.Skip("run by TestHostedCapsuleRefused")
	}
	msg := "ok"
	c, err := capsule.Open(vfs.OS{}, dir, capsule.Config{})
	if err == nil {
		err = c.Commit(func(tx *capsule.Tx) error { return tx.SetWorkingMemory([]byte("from the CLI\n")) })
	}
	if err != nil {
		msg = err.Error()
	}
	if err := os.WriteFile(os.Getenv("CAPSULE_COMMIT_CHILD_OUT"), []byte(msg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func commitChild(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCommitChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CAPSULE_COMMIT_CHILD_DIR="+dir, "CAPSULE_COMMIT_CHILD_OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
