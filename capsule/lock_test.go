package capsule

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// hostRecord is the record the tests' host writes.
var hostRecord = HostRecord{V: 1, Release: "test", Node: "nhosttesthosttesthosttesthos", PID: os.Getpid(), Listen: "127.0.0.1:7070", Started: "2026-01-01T00:00:00Z"}

// TestHostRefusesOtherProcesses (FORMAT §4.2, PROTOCOL §5): while one
// process hosts a folder, another process's commit, snapshot and blob
// pruning of a capsule inside it are refused naming the host, and change
// nothing; once
// the host releases it, they succeed. The other process is this test
// binary run again (TestHostChild).
func TestHostRefusesOtherProcesses(t *testing.T) {
	data := t.TempDir()
	capDir := filepath.Join(data, "agents", "a", "capsule")
	if _, err := Init(vfs.OS{}, capDir, testConfig()); err != nil {
		t.Fatal(err)
	}
	h, err := LockHost(vfs.OS{}, data, hostRecord)
	if err != nil {
		t.Fatal(err)
	}
	before := vfstest.Snapshot(t, vfs.OS{}, capDir)
	// One sentence naming the capsule and the node, read once (it used to
	// read "commit: capsule: held by another process: DATA is in use by …").
	want := capDir + " is hosted by node " + hostRecord.Node + " (pid " + strconv.Itoa(os.Getpid()) + ", 127.0.0.1:7070): stop the node or use the capsule agent commands"
	for _, op := range []string{"commit", "snapshot", "prune"} {
		if out := runChild(t, op, capDir); out != want {
			t.Errorf("%s in another process:\n got %q\nwant %q", op, out, want)
		}
	}
	if diff := cmp.Diff(before, vfstest.Snapshot(t, vfs.OS{}, capDir)); diff != "" {
		t.Errorf("the refused writes changed the capsule (-before +after):\n%s", diff)
	}
	// The host itself commits.
	c, err := Open(vfs.OS{}, capDir, testConfig().Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(func(tx *Tx) error { return tx.SetWorkingMemory([]byte("host\n")) }); err != nil {
		t.Fatalf("the host's own commit: %v", err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if out := runChild(t, "commit", capDir); out != "ok" {
		t.Errorf("after release, another process's commit: %q", out)
	}
}

// TestHostChild is the other process of TestHostRefusesOtherProcesses.
func TestHostChild(t *testing.T) {
	dir := os.Getenv("CAPSULE_HOST_CHILD_DIR")
	if dir == "" {
		t.Skip("run by TestHostRefusesOtherProcesses")
	}
	c, err := Open(vfs.OS{}, dir, testConfig().Config)
	if err == nil {
		switch os.Getenv("CAPSULE_HOST_CHILD_OP") {
		case "commit":
			err = c.Commit(func(tx *Tx) error { return tx.SetWorkingMemory([]byte("child\n")) })
		case "snapshot":
			ws := t.TempDir()
			_ = os.WriteFile(filepath.Join(ws, "f"), []byte("a blob\n"), 0o644)
			_, err = c.SnapshotFrom(ws, SnapshotConfig{})
		case "prune":
			_, _, err = c.PruneBlobs(nil)
		}
	}
	msg := "ok"
	if err != nil {
		msg = err.Error()
		if !errors.Is(err, ErrHeld) {
			msg = "not ErrHeld: " + msg
		}
	}
	if err := os.WriteFile(os.Getenv("CAPSULE_HOST_CHILD_OUT"), []byte(msg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runChild(t *testing.T, op, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CAPSULE_HOST_CHILD_DIR="+dir, "CAPSULE_HOST_CHILD_OP="+op, "CAPSULE_HOST_CHILD_OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSecondHostRefused: a second host of the same folder is refused, in
// this process (by the registry, also on vfs.Mem) and naming the first.
func TestSecondHostRefused(t *testing.T) {
	for name, fsys := range map[string]vfs.FS{"os": vfs.OS{}, "mem": vfs.NewMem()} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := fsys.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			h, err := LockHost(fsys, dir, hostRecord)
			if err != nil {
				t.Fatal(err)
			}
			_, err = LockHost(fsys, dir, HostRecord{Node: "second"})
			var he *HeldError
			if !errors.As(err, &he) || he.Host != hostRecord {
				t.Fatalf("second host: %v, want a HeldError naming the first", err)
			}
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
			h2, err := LockHost(fsys, dir, hostRecord)
			if err != nil {
				t.Fatalf("after release: %v", err)
			}
			h2.Release()
		})
	}
}

// TestHeldErrorText: a refusal reads once, names the folder and the node
// (its ID, PID and listen address) and says what to do; no sentinel
// prefix stutters before it.
func TestHeldErrorText(t *testing.T) {
	rec := HostRecord{Node: "nhost", PID: 123, Listen: "127.0.0.1:7070", Socket: "/d/node.sock", Started: "2026-01-01T00:00:00Z"}
	cases := []struct {
		name string
		err  *HeldError
		want string
	}{
		{"write", &HeldError{Dir: "/d", Path: "d/agents/A/capsule", Host: rec},
			"d/agents/A/capsule is hosted by node nhost (pid 123, 127.0.0.1:7070): stop the node or use the capsule agent commands"},
		{"write, not yet listening", &HeldError{Dir: "/d", Path: "c", Host: HostRecord{Node: "nhost", PID: 123}},
			"c is hosted by node nhost (pid 123): stop the node or use the capsule agent commands"},
		{"write, record unreadable", &HeldError{Dir: "/d", Path: "c", RecordErr: errors.New("bad")},
			"c is hosted by another node process (its record /d/node.lock.json: bad): stop the node or use the capsule agent commands"},
		{"second host", &HeldError{Dir: "/d", Host: rec},
			"data folder /d is in use by node nhost (pid 123, listening on 127.0.0.1:7070, socket /d/node.sock, started 2026-01-01T00:00:00Z): a data folder has one node; stop that node or use another folder"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.err.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !errors.Is(tc.err, ErrHeld) {
				t.Error("not ErrHeld")
			}
		})
	}
}
