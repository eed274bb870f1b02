package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/archive"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// newerCapsule makes a capsule whose environment spec claims version 3,
// written by release 0.4.0 (digests consistent, so only the version is
// wrong), and its archive.
func newerCapsule(t *testing.T) (dir, tarFile string) {
	t.Helper()
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	root := t.TempDir()
	dir = filepath.Join(root, "newer")
	mustCLI(t, "init", dir)
	mustCLI(t, "log", "append", dir, "--kind", "user", "--body", `{"text":"hi"}`)
	spec := filepath.Join(dir, "environment", "spec.json")
	old, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	nb := []byte(strings.Replace(string(old), `"version": 2`, `"version": 3`, 1))
	if err := os.WriteFile(spec, nb, 0o644); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(dir, "manifest.json")
	m, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(m), `"environment": 2`, `"environment": 3`, 1)
	text = regexp.MustCompile(`"release": "[^"]*"`).ReplaceAllString(text, `"release": "0.4.0"`)
	text = strings.Replace(text, string(digest.FromBytes(old)), string(digest.FromBytes(nb)), 1)
	if err := os.WriteFile(mp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	tarFile = filepath.Join(root, "newer.capsule.tar")
	if _, err := archive.ExportFile(vfs.OS{}, dir, tarFile, archive.ExportConfig{}); err != nil {
		t.Fatal(err)
	}
	return dir, tarFile
}

// FORMAT §11.4: every read path of the CLI refuses a version newer than
// this release reads, exit 1, naming the kind, the version, the writer and
// the release that reads it, and writes nothing: the folder's bytes are
// unchanged and no output appears.
func TestReadPathsRefuseANewerVersion(t *testing.T) {
	dir, tarFile := newerCapsule(t)
	want := fmt.Sprintf("environment schema version 3 (written by 0.4.0) is newer than release %s reads (1 to 2): read it with release 0.4.0 or later", schema.Release)
	scratch := t.TempDir()
	imported, ws := filepath.Join(scratch, "imported"), filepath.Join(scratch, "ws")
	before := treeOf(t, dir)
	for _, args := range [][]string{
		{"verify", dir},
		{"verify", dir, "--json"},
		{"verify", tarFile},
		{"import", tarFile, "-o", imported, "-q"},
		{"inspect", dir},
		{"render", dir, "--provider", "anthropic", "--model", "claude-sonnet-4-5"},
		{"checkout", dir, "--to", ws, "-q"},
		{"log", dir},
		{"log", "verify", dir},
		{"env", "show", dir},
		{"migrate", dir},
		{"migrate", dir, "--to", "0.1.0"},
		{"gc", dir},
	} {
		out, errs, code := capsuleCLI(t, args...)
		if code != exitVerify || !strings.Contains(out+errs, want) {
			t.Errorf("capsule %s: exit %d, want 1 naming the refusal:\n%s%s", strings.Join(args, " "), code, out, errs)
		}
	}
	if got := treeOf(t, dir); got != before {
		t.Errorf("a refusal changed the folder:\n%s\nwant\n%s", got, before)
	}
	for _, p := range []string{imported, ws} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s was created by a refused read", p)
		}
	}
}

// `capsule migrate` of a 0.1.0 fixture, up and back, with --dry-run and
// --json, as the README's "Upgrading" section shows it.
func TestMigrateCommand(t *testing.T) {
	root := "../../testdata/fixtures/0.1.0"
	dir := restoreFolder(t, filepath.Join(root, "capsules", "conversation"), filepath.Join(root, "expect", "conversation", "folder.txt"))
	before := treeOf(t, dir)
	out, _, code := capsuleCLI(t, "migrate", dir, "--dry-run")
	if code != exitOK || !strings.Contains(out, "would migrate") || treeOf(t, dir) != before {
		t.Fatalf("dry run: exit %d, or it wrote:\n%s", code, out)
	}
	out, _, code = capsuleCLI(t, "migrate", dir, "--json")
	if code != exitOK || !strings.Contains(out, `"manifest": "rewritten"`) || !strings.Contains(out, `"kind": "memory_index"`) {
		t.Fatalf("migrate: exit %d:\n%s", code, out)
	}
	out, _, code = capsuleCLI(t, "inspect", dir, "--json")
	if code != exitOK || !strings.Contains(out, `"environment": 2`) || !strings.Contains(out, `"effective_network": "none"`) {
		t.Fatalf("inspect after migrate: exit %d:\n%s", code, out)
	}
	if out, _, code = capsuleCLI(t, "gc", dir); code != exitOK || !strings.Contains(out, "removed 0") {
		t.Fatalf("gc after migrate: exit %d: %s", code, out)
	}
	if _, _, code = capsuleCLI(t, "migrate", dir, "--to", "0.9.9"); code != exitUsage {
		t.Errorf("unknown release: exit %d, want 2", code)
	}
	out, _, code = capsuleCLI(t, "migrate", dir, "--to", "0.1.0")
	if code != exitOK || !strings.Contains(out, "manifest restored") {
		t.Fatalf("rollback: exit %d:\n%s", code, out)
	}
	if got := treeOf(t, dir); got != before {
		t.Errorf("rollback differs from what 0.1.0 wrote:\n%s\nwant\n%s", got, before)
	}
}
