package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The memory verbs over a folder: a stale index is reported, rebuilt,
// checked, searched; a tampered one fails --check and is rebuilt.
func TestMemoryVerbs(t *testing.T) {
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "agent")
	mustCLI(t, "init", dir)
	mustCLI(t, "log", "append", dir, "--kind", "user", "--body", `{"text":"the gateway listens on port 8443 after the TLS change"}`)
	mustCLI(t, "log", "append", dir, "--kind", "user", "--body", `{"text":"billing deploys were rolled back because of a memory leak"}`)

	if _, errOut, code := capsuleCLI(t, "memory", "rebuild", dir, "--check"); code != exitVerify || !strings.Contains(errOut, "not a clean build") {
		t.Fatalf("--check of the stale index of a new capsule: exit %d, %s", code, errOut)
	}
	if out := mustCLI(t, "memory", "rebuild", dir); !strings.Contains(out, "full rebuild: 2 chunks, 2 embedded") {
		t.Fatalf("rebuild: %s", out)
	}
	mustCLI(t, "memory", "rebuild", dir, "--check")
	mustCLI(t, "verify", dir)

	var res struct {
		Index string
		Hits  []struct {
			Event, Snippet string
			Score          float64
		}
	}
	out := mustCLI(t, "memory", "search", dir, "why did we roll back the billing deployment", "--k", "1", "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Index != "unchanged" || len(res.Hits) != 1 || !strings.Contains(res.Hits[0].Snippet, "memory leak") {
		t.Fatalf("search: %s", out)
	}

	var st struct {
		Current bool
		Chunks  int
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "memory", "stats", dir, "--json")), &st); err != nil || !st.Current || st.Chunks != 2 {
		t.Fatalf("stats: %+v, %v", st, err)
	}

	idx := filepath.Join(dir, "memory", "vector_index", "index.json")
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx, b[:len(b)-40], 0o644); err != nil { // truncated, behind the manifest's back
		t.Fatal(err)
	}
	if _, errOut, code := capsuleCLI(t, "memory", "rebuild", dir, "--check"); code != exitVerify {
		t.Fatalf("--check of a truncated index: exit %d, %s", code, errOut)
	}
	if out := mustCLI(t, "memory", "rebuild", dir); !strings.Contains(out, "full rebuild") {
		t.Fatalf("rebuild of a truncated index: %s", out)
	}
	mustCLI(t, "memory", "rebuild", dir, "--check")
	mustCLI(t, "verify", dir)
}

// FORMAT §7.9, §11.7.2: after two diverged copies merge (capsule log merge
// and apply), rebuilding either copy's index embeds only what it lacks and
// gives the clean build's bytes, the same on both copies.
func TestMemoryAfterMerge(t *testing.T) {
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	d := t.TempDir()
	a, b := filepath.Join(d, "a"), filepath.Join(d, "b")
	mustCLI(t, "init", a)
	mustCLI(t, "log", "append", a, "--kind", "user", "--body", `{"text":"the shared history"}`)
	mustCLI(t, "memory", "rebuild", a)
	sh(t, nil, "cp", "-a", a, b)
	mustCLI(t, "log", "append", a, "--kind", "user", "--body", `{"text":"written on copy a"}`)
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir()) // another machine ID
	mustCLI(t, "log", "append", b, "--kind", "user", "--body", `{"text":"written on copy b"}`)
	mustCLI(t, "memory", "rebuild", b)
	merged := filepath.Join(d, "merged.jsonl")
	mustCLI(t, "log", "merge", a, b, "-o", merged)
	mustCLI(t, "log", "apply", a, merged)
	mustCLI(t, "log", "apply", b, merged)
	for _, dir := range []string{a, b} {
		if out := mustCLI(t, "memory", "rebuild", dir); !strings.HasPrefix(out, "incremental rebuild: 3 chunks") {
			t.Fatalf("rebuild of %s after the merge: %s", filepath.Base(dir), out)
		}
		mustCLI(t, "memory", "rebuild", dir, "--check")
		mustCLI(t, "verify", dir)
	}
	ia, _ := os.ReadFile(filepath.Join(a, "memory", "vector_index", "index.json"))
	ib, _ := os.ReadFile(filepath.Join(b, "memory", "vector_index", "index.json"))
	if len(ia) == 0 || string(ia) != string(ib) {
		t.Fatal("the two merged copies have different indexes")
	}
}
