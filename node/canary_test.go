package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/fixtures"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// canaryNode starts a node on dir with canary as Config.Canary.
func canaryNode(t *testing.T, dir, canary string) (*Node, *api.LocalClient) {
	t.Helper()
	n, err := New(Config{Dir: dir, Listen: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", StepInterval: 5 * time.Millisecond, Canary: canary})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	return n, api.NewLocalClient(filepath.Join(dir, SocketFile))
}

// readyz returns /readyz's status and its report.
func readyz(t *testing.T, n *Node) (int, api.Readiness) {
	t.Helper()
	resp, err := http.Get("http://" + n.MetricsAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var rd api.Readiness
	if err := json.Unmarshal(b, &rd); err != nil {
		t.Fatalf("/readyz body %q: %v", b, err)
	}
	return resp.StatusCode, rd
}

// canaryFolder restores the named 0.2.0 fixture into a new canary folder
// and returns the folder and the capsule's path in it.
func canaryFolder(t *testing.T, name string) (string, string) {
	t.Helper()
	caps, err := fixtures.Capsules()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range caps {
		if c.Release == "0.2.0" && c.Name == name {
			p := filepath.Join(dir, name)
			if err := restoreFixture(vfs.OS{}, c, p); err != nil {
				t.Fatal(err)
			}
			return dir, p
		}
	}
	t.Fatalf("no fixture 0.2.0/%s", name)
	return "", ""
}

// TestCanaryPasses: the embedded fixtures and a good canary folder pass,
// the node is ready, its agent resumes, and the counts are its capsule's
// schemas (FORMAT §11.10).
func TestCanaryPasses(t *testing.T) {
	dir := t.TempDir()
	id := createRunningAgent(t, dir)
	canary, capDir := canaryFolder(t, "conversation")
	n, c := canaryNode(t, dir, canary)
	code, rd := readyz(t, n)
	if code != 200 || !rd.Ready || rd.Reason != "" {
		t.Fatalf("/readyz = %d %+v, want 200 ready", code, rd)
	}
	caps, _ := fixtures.Capsules()
	if len(rd.Checked) != len(caps)+1 || rd.Checked[len(caps)].Name != capDir {
		t.Errorf("checked %+v, want the %d fixtures and %s", rd.Checked, len(caps), capDir)
	}
	if want := len(schema.Kinds); len(rd.Counts) != want {
		t.Errorf("counts %+v, want one per kind (%d)", rd.Counts, want)
	}
	for _, sc := range rd.Counts {
		if sc.Capsules != 1 || sc.Version != schema.Current[schema.Kind(sc.Kind)] {
			t.Errorf("count %+v, want 1 capsule at version %d", sc, schema.Current[schema.Kind(sc.Kind)])
		}
	}
	waitSteps(t, n, id, 2)
	info, err := c.Info(context.Background())
	if err != nil || info.Readiness == nil || !info.Readiness.Ready {
		t.Fatalf("Info = %+v, %v; want ready", info, err)
	}
}

// TestCanaryRefusalKeepsNodeNotReady: a canary capsule of a journal
// version this release does not read keeps the node not ready, with the
// folder and the refusal in /readyz and the node status; its agent does
// not run and incoming offers are refused.
func TestCanaryRefusalKeepsNodeNotReady(t *testing.T) {
	dir := t.TempDir()
	id := createRunningAgent(t, dir)
	canary, capDir := canaryFolder(t, "conversation")
	setSchema(t, filepath.Join(capDir, "manifest.json"), "journal", 99)
	n, c := canaryNode(t, dir, canary)
	code, rd := readyz(t, n)
	if code != http.StatusServiceUnavailable || rd.Ready || !strings.Contains(rd.Reason, capDir) || !strings.Contains(rd.Reason, "99") {
		t.Fatalf("/readyz = %d %+v, want 503 naming %s and version 99", code, rd, capDir)
	}
	info, err := c.Info(context.Background())
	if err != nil || info.Readiness == nil || info.Readiness.Ready || info.Readiness.Reason != rd.Reason {
		t.Fatalf("Info = %+v, %v; want not ready, reason %q", info, err, rd.Reason)
	}
	st, err := c.Agent(context.Background(), id)
	if err != nil || st.State == api.StateRunning || !strings.Contains(st.Error, "not ready") {
		t.Fatalf("agent = %+v, %v; want not running, blocked for the canary", st, err)
	}
	if _, err := c.StartAgent(context.Background(), id); err == nil {
		t.Error("StartAgent on a node that is not ready: no error")
	}
	offer := transfer.Message{Type: transfer.MsgOffer, From: "npeer", Agent: id}
	if _, err := n.Message(context.Background(), "npeer", api.Message{Body: mustJSON(offer)}); !errors.Is(err, api.ErrUnavailable) || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("offer: err = %v, want ErrUnavailable: node not ready", err)
	}
	if exists(vfs.OS{}, filepath.Join(dir, canaryScratch)) {
		t.Error("the canary's scratch folder is left behind")
	}
}

// createRunningAgent starts a node on dir without a canary, creates a
// running agent, and closes the node (the agent is to resume at the next start).
func createRunningAgent(t *testing.T, dir string) string {
	t.Helper()
	n, err := New(Config{Dir: dir, StepInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := api.NewLocalClient(filepath.Join(dir, SocketFile)).CreateAgent(context.Background(), api.CreateAgentRequest{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, n, st.ID, 1)
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st.ID
}

// setSchema rewrites the manifest's schema version of kind.
func setSchema(t *testing.T, path, kind string, v int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["schemas"].(map[string]any)[kind] = v
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMoveIntoNotReadyNodeRollsBack: a move to a node whose canary failed
// is refused at its offer, rolls back, and the agent runs on the source
// again (PROTOCOL §7.3).
func TestMoveIntoNotReadyNodeRollsBack(t *testing.T) {
	a := newNode(t, filepath.Join(t.TempDir(), "a"), nodeOpts{})
	canary, capDir := canaryFolder(t, "empty")
	setSchema(t, filepath.Join(capDir, "manifest.json"), "journal", 99)
	b, err := New(Config{Dir: filepath.Join(t.TempDir(), "b"), Listen: "127.0.0.1:0", Socket: "-", Canary: canary,
		RetryInterval: 10 * time.Millisecond, RequestTimeout: 5 * time.Second, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	(&cluster{t: t, nodes: []*Node{a, b}}).link()
	id := createAgent(t, a, "")
	if res := move(t, a, b, id); res.Outcome != api.OutcomeRolledBack || !strings.Contains(res.Reason, "not ready") {
		t.Fatalf("move into a node that is not ready = %+v, want rolled back, naming why", res)
	}
	st, err := a.Agent(context.Background(), id)
	if err != nil || st.State != api.StateRunning {
		t.Fatalf("source agent after the rollback = %+v, %v; want running", st, err)
	}
}

// BenchmarkCanaryPass measures the start-up canary pass over the embedded
// fixtures of a node that holds no agent (what it adds to every start).
func BenchmarkCanaryPass(b *testing.B) {
	n, err := New(Config{Dir: b.TempDir(), Socket: "-"})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close(context.Background())
	for b.Loop() {
		if rd := n.canaryPass(); !rd.Ready {
			b.Fatal(rd.Reason)
		}
	}
}
