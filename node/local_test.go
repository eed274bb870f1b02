package node

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
)

// TestLocalAPIOverSocket drives a node through its unix socket with the
// CLI's client, and reads its metrics, health and readiness.
func TestLocalAPIOverSocket(t *testing.T) {
	dir := t.TempDir()
	n, err := New(Config{Dir: dir, Listen: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", StepInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	sock := filepath.Join(dir, SocketFile)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	c := api.NewLocalClient(sock)
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil || info.ID != string(n.ID()) || info.Listen != n.Addr() {
		t.Fatalf("Info = %+v, %v", info, err)
	}
	st, err := c.CreateAgent(ctx, api.CreateAgentRequest{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, n, st.ID, 2)
	if st, err = c.StopAgent(ctx, st.ID); err != nil || st.State != api.StateStopped {
		t.Fatalf("StopAgent = %+v, %v", st, err)
	}
	if _, err := c.Agent(ctx, "01N0SXCHAGENT0000000000000"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("unknown agent: err = %v, want ErrNotFound", err)
	}
	if _, err := c.Move(ctx, st.ID, api.MoveRequest{To: "nope"}, nil); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("move to a bad ID: err = %v, want ErrInvalid", err)
	}
	if err := c.AddPeer(ctx, api.Peer{ID: string(n.ID()), Addr: "127.0.0.1:1"}); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("adding itself as a peer: err = %v, want ErrInvalid", err)
	}
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": "capsule_runner_steps_total"} {
		resp, err := http.Get("http://" + n.MetricsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s = %d %q, want 200 containing %q", path, resp.StatusCode, b, want)
		}
	}
}
