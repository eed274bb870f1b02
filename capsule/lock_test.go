package capsule

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	for _, op := range []string{"commit", "snapshot", "prune"} {
		out := runChild(t, op, capDir)
		for _, want := range []string{"in use by node " + hostRecord.Node, "listening on 127.0.0.1:7070", data} {
			if !strings.Contains(out, want) {
				t.Errorf("%s in another process: %q does not say %q", op, out, want)
			}
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
