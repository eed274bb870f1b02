package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// exitFixture is what the exit-code table runs verbs against.
type exitFixture struct {
	good, bad, badTar, ws string
}

// newExitFixture makes a capsule with a snapshot and a journal event
// (good), a copy with a changed blob, working memory and journal line
// (bad) and bad's archive exported without verification.
func newExitFixture(t *testing.T) exitFixture {
	t.Helper()
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	d := t.TempDir()
	f := exitFixture{good: filepath.Join(d, "good"), bad: filepath.Join(d, "bad"), badTar: filepath.Join(d, "bad.capsule.tar"),
		ws: filepath.Join(d, "ws")}
	writeTree(t, f.ws, map[string]string{"a.txt": "hello\n", "b.txt": "world\n"})
	mustCLI(t, "init", f.good)
	mustCLI(t, "snapshot", f.good, "--from", f.ws, "-q")
	mustCLI(t, "log", "append", f.good, "--kind", "user", "--body", `{"text":"hi"}`)
	sh(t, nil, "cp", "-a", f.good, f.bad)
	sh(t, nil, "chmod", "-R", "u+w", f.bad)
	blobs, _ := filepath.Glob(filepath.Join(f.bad, "artifacts", "blobs", "*"))
	writeTree(t, f.bad, map[string]string{
		"artifacts/blobs/" + filepath.Base(blobs[0]): "HELLO\n",
		"memory/working_memory.md":                   "changed\n",
	})
	j := filepath.Join(f.bad, "memory", "timeline_events.jsonl")
	b, _ := os.ReadFile(j)
	writeTree(t, f.bad, map[string]string{"memory/timeline_events.jsonl": strings.Replace(string(b), `"hi"`, `"ho"`, 1)})
	mustCLI(t, "export", f.bad, "-o", f.badTar, "--no-verify", "-q")
	return f
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// exitCase is one verb run three ways; nil args means the case does not
// apply to the verb (it says why in a comment).
type exitCase struct {
	missing, usage, tampered []string
	tamperedCode             int
}

// exitCases returns, for every verb of exitDocs, its three runs.
func exitCases(f exitFixture, scratch func() string) map[string]exitCase {
	id := "01JDEMO0000000000000000000" // a well-formed agent ID
	peer := "n" + strings.Repeat("a", 26)
	nope := func() string { return filepath.Join(scratch(), "nope") }
	noNode := []string{"--data", nope()}
	return map[string]exitCase{
		"init":           {usage: []string{"init"}}, // creates DIR and its parents
		"snapshot":       {missing: []string{"snapshot", f.good, "--from", nope()}, usage: []string{"snapshot", f.good}, tampered: []string{"snapshot", copyOf(f.bad, scratch), "--from", f.ws, "-q"}},
		"env set":        {missing: []string{"env", "set", nope(), "A=1"}, usage: []string{"env", "set", f.good}, tampered: []string{"env", "set", copyOf(f.bad, scratch), "A=1"}},
		"env unset":      {missing: []string{"env", "unset", nope(), "A"}, usage: []string{"env", "unset", f.good}},
		"env secret add": {missing: []string{"env", "secret", "add", nope(), "K"}, usage: []string{"env", "secret", "add", f.good}},
		"env secret rm":  {missing: []string{"env", "secret", "rm", nope(), "K"}, usage: []string{"env", "secret", "rm", f.good}},
		"env show":       {missing: []string{"env", "show", nope()}, usage: []string{"env", "show"}, tampered: []string{"env", "show", f.bad}},
		"env load":       {missing: []string{"env", "load", f.good, nope()}, usage: []string{"env", "load", f.good}},
		"verify":         {missing: []string{"verify", nope()}, usage: []string{"verify"}, tampered: []string{"verify", f.bad, "-q"}, tamperedCode: 1},
		"inspect":        {missing: []string{"inspect", nope()}, usage: []string{"inspect"}, tampered: []string{"inspect", f.bad}}, // reads no body
		"log":            {missing: []string{"log", nope()}, usage: []string{"log", f.good, "--bogus"}, tampered: []string{"log", f.bad}, tamperedCode: 1},
		"log verify":     {missing: []string{"log", "verify", nope()}, usage: []string{"log", "verify"}, tampered: []string{"log", "verify", f.bad}, tamperedCode: 1},
		"log append":     {missing: []string{"log", "append", nope(), "--kind", "user", "--body", `{"text":"x"}`}, usage: []string{"log", "append", f.good, "--body", "{}"}, tampered: []string{"log", "append", copyOf(f.bad, scratch), "--kind", "user", "--body", `{"text":"x"}`}, tamperedCode: 1},
		"log merge":      {missing: []string{"log", "merge", nope(), f.good, "-o", filepath.Join(scratch(), "m.jsonl")}, usage: []string{"log", "merge", f.good}, tampered: []string{"log", "merge", f.bad, f.good, "-o", filepath.Join(scratch(), "m.jsonl")}, tamperedCode: 1},
		"log apply":      {missing: []string{"log", "apply", f.good, nope()}, usage: []string{"log", "apply", f.good}, tampered: []string{"log", "apply", copyOf(f.bad, scratch), filepath.Join(f.good, "memory", "timeline_events.jsonl")}, tamperedCode: 1},
		"render":         {missing: []string{"render", nope(), "--provider", "anthropic", "--model", "claude-sonnet-4-5"}, usage: []string{"render", f.good}, tampered: []string{"render", f.bad, "--provider", "anthropic", "--model", "claude-sonnet-4-5"}, tamperedCode: 1},
		"export":         {missing: []string{"export", nope(), "-o", filepath.Join(scratch(), "x.tar")}, usage: []string{"export", f.good}, tampered: []string{"export", f.bad, "-o", filepath.Join(scratch(), "x.tar"), "-q"}, tamperedCode: 1},
		"import":         {missing: []string{"import", nope(), "-o", filepath.Join(scratch(), "x")}, usage: []string{"import", f.badTar}, tampered: []string{"import", f.badTar, "-o", filepath.Join(scratch(), "x"), "-q"}, tamperedCode: 1},
		"checkout":       {missing: []string{"checkout", nope(), "--to", filepath.Join(scratch(), "w")}, usage: []string{"checkout", f.good}, tampered: []string{"checkout", f.bad, "--to", filepath.Join(scratch(), "w"), "-q"}, tamperedCode: 1},
		"migrate":        {missing: []string{"migrate", nope()}, usage: []string{"migrate", f.good, "--to", "9.9.9"}, tampered: []string{"migrate", copyOf(f.bad, scratch), "--to", "0.1.0"}, tamperedCode: 1},
		"gc":             {missing: []string{"gc", nope()}, usage: []string{"gc"}, tampered: []string{"gc", copyOf(f.bad, scratch)}, tamperedCode: 1},
		"memory rebuild": {missing: []string{"memory", "rebuild", nope()}, usage: []string{"memory", "rebuild"}, tampered: []string{"memory", "rebuild", copyOf(f.bad, scratch), "--check"}, tamperedCode: 1},
		"memory search":  {missing: []string{"memory", "search", nope(), "q"}, usage: []string{"memory", "search", f.good}, tampered: []string{"memory", "search", f.bad, "q"}, tamperedCode: 1},
		"memory stats":   {missing: []string{"memory", "stats", nope()}, usage: []string{"memory", "stats"}, tampered: []string{"memory", "stats", f.bad}, tamperedCode: 1},
		// node and node id create a missing data folder, as documented.
		"node":           {usage: []string{"node", "extra"}},
		"node wait":      {missing: []string{"node", "wait", "--data", nope(), "--timeout", "100ms"}, usage: []string{"node", "wait", "extra"}},
		"node id":        {usage: []string{"node", "id", "extra"}},
		"node status":    {missing: append([]string{"node", "status"}, noNode...), usage: []string{"node", "status", "extra"}},
		"node peer add":  {missing: []string{"node", "peer", "add", peer, "127.0.0.1:1", "--data", nope()}, usage: []string{"node", "peer", "add", "not-a-node-id", "127.0.0.1:1", "--data", scratch()}},
		"node peer list": {missing: []string{"node", "peer", "list", "--data", nope()}, usage: []string{"node", "peer", "list", "extra"}},
		"node peer rm":   {missing: []string{"node", "peer", "rm", peer, "--data", nope()}, usage: []string{"node", "peer", "rm", "not-a-node-id", "--data", scratch()}},
		"agent create":   {missing: append([]string{"agent", "create"}, noNode...), usage: []string{"agent", "create", "extra"}},
		"agent list":     {missing: append([]string{"agent", "list"}, noNode...), usage: []string{"agent", "list", "extra"}},
		"agent status":   {missing: append([]string{"agent", "status", id}, noNode...), usage: []string{"agent", "status"}},
		"agent stop":     {missing: append([]string{"agent", "stop", id}, noNode...), usage: []string{"agent", "stop"}},
		"agent start":    {missing: append([]string{"agent", "start", id}, noNode...), usage: []string{"agent", "start"}},
		"agent rm":       {missing: append([]string{"agent", "rm", id}, noNode...), usage: []string{"agent", "rm"}},
		"agent discard":  {missing: append([]string{"agent", "discard", id}, noNode...), usage: []string{"agent", "discard"}},
		"agent say":      {missing: append([]string{"agent", "say", id, "hi"}, noNode...), usage: []string{"agent", "say", id}},
		"agent model":    {missing: append([]string{"agent", "model", id, "--provider", "ollama", "--model", "m"}, noNode...), usage: []string{"agent", "model", id}},
		"agent log":      {missing: append([]string{"agent", "log", id}, noNode...), usage: []string{"agent", "log"}},
		"agent chat":     {missing: append([]string{"agent", "chat", id}, noNode...), usage: []string{"agent", "chat"}},
		"agent wait":     {missing: append([]string{"agent", "wait", id}, noNode...), usage: []string{"agent", "wait"}},
		"memory show":    {missing: []string{"memory", "show", nope()}, usage: []string{"memory", "show"}, tampered: []string{"memory", "show", f.bad}, tamperedCode: 1},
		"move":           {missing: append([]string{"move", id, "--to", peer}, noNode...), usage: append([]string{"move", id, "--to", "not-a-node-id"}, noNode...)},
		"move status":    {missing: append([]string{"move", "status", id}, noNode...), usage: []string{"move", "status"}},
		"agent approve":  {missing: append([]string{"agent", "approve", id, "c1"}, noNode...), usage: []string{"agent", "approve", id}},
		"agent deny":     {missing: append([]string{"agent", "deny", id, "c1", "--reason", "no"}, noNode...), usage: []string{"agent", "deny", id, "c1"}},
		"agent effect":   {missing: append([]string{"agent", "effect", id, "c1", "--done"}, noNode...), usage: []string{"agent", "effect", id, "c1"}},
		"move resolve":   {missing: append([]string{"move", "resolve", id}, noNode...), usage: []string{"move", "resolve"}},
		"demo":           {usage: []string{"demo", "extra"}},
		"version":        {usage: []string{"version", "extra"}},
		"ui open":        {missing: []string{"ui", "open", "--data", nope()}, usage: []string{"ui", "open", "extra"}},
		"compat check":   {missing: []string{"compat", "check", nope()}, usage: []string{"compat", "check"}, tampered: []string{"compat", "check", f.bad}, tamperedCode: 1},
		"model serve":    {missing: []string{"model", "serve", "--replay", filepath.Join(f.ws, "no-such-cassette.json")}, usage: []string{"model", "serve", "--listen", "0.0.0.0:0"}},
		// secret set creates a missing data folder; a missing store is empty to ls.
		"secret set": {usage: []string{"secret", "set"}},
		"secret ls":  {usage: []string{"secret", "ls", "extra"}},
		"secret rm":  {missing: []string{"secret", "rm", "K", "--store", "file", "--data", nope()}, usage: []string{"secret", "rm"}},
	}
}

// copyOf copies a capsule folder for a verb that writes it.
func copyOf(dir string, scratch func() string) string {
	dst := filepath.Join(scratch(), filepath.Base(dir))
	if out, err := exec.Command("cp", "-a", dir, dst).CombinedOutput(); err != nil {
		panic(string(out))
	}
	return dst
}

// TestExitCodes runs every verb against a missing path (3), a usage error
// (2) and a tampered capsule (the code its --help documents), and checks
// that every verb of the CLI has a row and documents its codes.
func TestExitCodes(t *testing.T) {
	f := newExitFixture(t)
	cases := exitCases(f, t.TempDir)
	checkRows(t, cases)
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	verbs := runnableVerbs()
	for _, name := range names {
		c := cases[name]
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			if !verbs[name] {
				t.Skipf("this build has no verb %q yet (its row waits for it)", name)
			}
			for _, run := range []struct {
				what string
				args []string
				want int
			}{{"missing path", c.missing, exitInternal}, {"usage error", c.usage, exitUsage}, {"tampered capsule", c.tampered, c.tamperedCode}} {
				if run.args == nil {
					continue
				}
				out, errOut, code := capsuleCLI(t, run.args...)
				if code != run.want {
					t.Errorf("%s: capsule %s: exit %d, want %d\n%s%s", run.what, strings.Join(run.args, " "), code, run.want, out, errOut)
				}
			}
		})
	}
}

func runnableVerbs() map[string]bool {
	out := map[string]bool{}
	walk(newRoot(), func(c *cobra.Command) {
		if c.Runnable() {
			out[verbPath(c)] = true
		}
	})
	return out
}

// checkRows fails unless the table, exitDocs and the CLI's runnable verbs
// are the same set, and every verb's --help states its exit codes.
func checkRows(t *testing.T, cases map[string]exitCase) {
	t.Helper()
	walk(newRoot(), func(c *cobra.Command) {
		p := verbPath(c)
		if !c.Runnable() || p == "" || strings.HasPrefix(p, "help") || strings.HasPrefix(p, "completion") {
			return
		}
		if _, ok := exitDocs[p]; !ok {
			t.Errorf("verb %q has no exitDocs entry", p)
		}
		if !strings.Contains(c.Long, "Exit status: 0 ok") {
			t.Errorf("capsule %s --help does not document its exit codes", p)
		}
	})
	for p := range exitDocs {
		if _, ok := cases[p]; !ok {
			t.Errorf("verb %q has no row in the exit-code table", p)
		}
	}
	for p, c := range cases {
		d, ok := exitDocs[p]
		if !ok {
			t.Errorf("row %q names no verb", p)
		}
		if c.tamperedCode == exitVerify && d.verify == "" {
			t.Errorf("%q exits 1 on a tampered capsule but its --help does not say so", p)
		}
	}
}

// TestMissingKeyFilesSameCode: a missing signing key and a missing
// allowed-signers file are both a missing path, exit 3, for every verb
// that takes one.
func TestMissingKeyFilesSameCode(t *testing.T) {
	f := newExitFixture(t)
	nope := filepath.Join(t.TempDir(), "nope")
	tar := filepath.Join(t.TempDir(), "good.capsule.tar")
	mustCLI(t, "export", f.good, "-o", tar, "-q")
	for _, args := range [][]string{
		{"export", f.good, "-o", filepath.Join(t.TempDir(), "x.tar"), "--sign", nope, "-q"},
		{"verify", f.good, "--allowed-signers", nope, "--identity", "me@example.com", "-q"},
		{"verify", tar, "--allowed-signers", nope, "--identity", "me@example.com", "-q"},
		{"import", tar, "-o", filepath.Join(t.TempDir(), "x"), "--allowed-signers", nope, "--identity", "me@example.com", "-q"},
	} {
		if out, errOut, code := capsuleCLI(t, args...); code != exitInternal {
			t.Errorf("capsule %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, exitInternal, out, errOut)
		}
	}
}
