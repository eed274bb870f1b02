package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/digest"
)

// Workspace lists the capsule's recorded workspace: each file with its
// size, blob and exec bit, each symlink with its target.
func TestWorkspaceListsTheSnapshot(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string]string{"README": "hello\n", "src/run.sh": "#!/bin/sh\n"} {
		if err := os.WriteFile(filepath.Join(ws, path), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(ws, "src/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("README", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, t.TempDir(), nodeOpts{})
	id := createAgent(t, n, ws)
	got, err := n.Workspace(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := []api.WorkspaceEntry{
		{Path: "README", Type: "file", Size: 6, Blob: digest.FromString("hello\n").String()},
		{Path: "link", Type: "symlink", Target: "README"},
		{Path: "src/run.sh", Type: "file", Size: 10, Exec: true, Blob: digest.FromString("#!/bin/sh\n").String()},
	}
	if len(got.Entries) != len(want) {
		t.Fatalf("entries %+v, want %+v", got.Entries, want)
	}
	for i := range want {
		if got.Entries[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got.Entries[i], want[i])
		}
	}
	if _, err := n.Workspace(context.Background(), "01J00000000000000000000000"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Workspace of an unknown agent: %v, want ErrNotFound", err)
	}
}
