package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/manifest"
)

// divergedCopies makes two copies of one capsule that each appended an
// event under their own machine ID, and their merge.
func divergedCopies(t *testing.T) (laptop, server, merged string) {
	t.Helper()
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	d := t.TempDir()
	laptop, server, merged = filepath.Join(d, "laptop"), filepath.Join(d, "server"), filepath.Join(d, "merged.jsonl")
	mustCLI(t, "init", laptop)
	mustCLI(t, "log", "append", laptop, "--kind", "user", "--body", `{"text":"before"}`)
	sh(t, nil, "cp", "-a", laptop, server)
	mustCLI(t, "log", "append", laptop, "--kind", "user", "--body", `{"text":"on the laptop"}`)
	mustCLI(t, "log", "append", server, "--kind", "user", "--body", `{"text":"on the server"}`, "--machine", "m0server") // sorts before this host's ID: the merge interleaves
	mustCLI(t, "log", "merge", laptop, server, "-o", merged)
	return laptop, server, merged
}

func TestLogApply(t *testing.T) {
	laptop, server, merged := divergedCopies(t)
	for _, dir := range []string{laptop, server} {
		mustCLI(t, "log", "apply", dir, merged)
		mustCLI(t, "verify", dir, "-q")
		if out := mustCLI(t, "log", dir); strings.Count(out, "\n") != 3 || !strings.Contains(out, "on the laptop") || !strings.Contains(out, "on the server") {
			t.Errorf("log of %s after apply:\n%s", filepath.Base(dir), out)
		}
	}
	// Applying again changes nothing and succeeds.
	mustCLI(t, "log", "apply", laptop, merged)
}

func TestLogApplyRefuses(t *testing.T) {
	laptop, server, merged := divergedCopies(t)
	serverJournal := filepath.Join(server, filepath.FromSlash(manifest.JournalPath))
	before, _ := os.ReadFile(filepath.Join(laptop, filepath.FromSlash(manifest.JournalPath)))
	for _, c := range []struct {
		name string
		file string
		want int
	}{
		{"a journal lacking the capsule's events", serverJournal, exitVerify},
		{"a file that is not a journal", filepath.Join(laptop, manifest.FileName), exitVerify},
		{"a missing file", merged + ".nope", exitInternal},
	} {
		if _, errOut, code := capsuleCLI(t, "log", "apply", laptop, c.file); code != c.want {
			t.Errorf("%s: exit %d, want %d: %s", c.name, code, c.want, errOut)
		}
	}
	after, _ := os.ReadFile(filepath.Join(laptop, filepath.FromSlash(manifest.JournalPath)))
	if string(before) != string(after) {
		t.Error("a refused apply changed the journal")
	}
	// An event under an epoch above the holder's is refused.
	future := filepath.Join(t.TempDir(), "future.jsonl")
	mustCLI(t, "log", "append", future, "--kind", "user", "--body", `{"text":"later"}`, "--epoch", "7", "--machine", "mfuture")
	both := filepath.Join(t.TempDir(), "both.jsonl")
	mustCLI(t, "log", "merge", merged, future, "-o", both)
	if _, errOut, code := capsuleCLI(t, "log", "apply", laptop, both); code != exitVerify || !strings.Contains(errOut, "epoch 7") {
		t.Errorf("apply of a future epoch: exit %d: %s", code, errOut)
	}
}

// TestLogApplyCompletesInterrupted: an apply that wrote the journal but
// not the manifest (a crash between the two) completes when run again.
func TestLogApplyCompletesInterrupted(t *testing.T) {
	laptop, _, merged := divergedCopies(t)
	data, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(laptop, filepath.FromSlash(manifest.JournalPath)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, code := capsuleCLI(t, "verify", laptop, "-q"); code != exitVerify {
		t.Fatalf("the half-applied capsule verifies (exit %d); the test needs it not to", code)
	}
	mustCLI(t, "log", "apply", laptop, merged)
	mustCLI(t, "verify", laptop, "-q")
}
