package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node"
)

func TestCommitOf(t *testing.T) {
	set := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"vcs stamp", debug.BuildInfo{Settings: set("vcs.revision", "abc123", "vcs.modified", "false")}, "abc123"},
		{"modified tree", debug.BuildInfo{Settings: set("vcs.revision", "abc123", "vcs.modified", "true")}, "abc123-dirty"},
		{"pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201093000-abcdef123456"}}, "abcdef123456"},
		{"pseudo-version with build suffix", debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20261201093000-abcdef123456+dirty"}}, "abcdef123456"},
		{"release tag only", debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "unknown"},
		{"nothing recorded", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "unknown"},
	} {
		if got := commitOf(&c.info); got != c.want {
			t.Errorf("%s: commitOf = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestJSONEmptyLists: every list in --json output is [] when empty, never
// null.
func TestJSONEmptyLists(t *testing.T) {
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	d := t.TempDir()
	c, ws, tar := filepath.Join(d, "c"), filepath.Join(d, "ws"), filepath.Join(d, "c.capsule.tar")
	writeTree(t, ws, map[string]string{"a.txt": "a\n"})
	mustCLI(t, "init", c)
	for _, args := range [][]string{
		{"snapshot", c, "--from", ws, "--json", "-q"},
		{"verify", c, "--json", "-q"},
		{"export", c, "-o", tar, "--json", "-q"},
		{"verify", tar, "--json", "-q"},
		{"log", "verify", c, "--json"},
		{"gc", c, "--json"},
		{"node", "id", "--data", filepath.Join(d, "node"), "--json"},
		{"node", "peer", "list", "--data", filepath.Join(d, "node"), "--json"},
	} {
		out := mustCLI(t, args...)
		if strings.Contains(out, "null") {
			t.Errorf("capsule %s prints null:\n%s", strings.Join(args, " "), out)
		}
		if !json.Valid([]byte(out)) {
			t.Errorf("capsule %s prints no JSON:\n%s", strings.Join(args, " "), out)
		}
	}
}

func TestEmptyLists(t *testing.T) {
	type inner struct{ L []int }
	type outer struct {
		A []string
		B *inner
		C []inner
		R json.RawMessage
		p []int
	}
	got, _ := json.Marshal(emptyLists(outer{B: &inner{}, C: []inner{{}}}))
	want := `{"A":[],"B":{"L":[]},"C":[{"L":[]}],"R":null}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("emptyLists (-want +got):\n%s", diff)
	}
}

func TestNoNodeSaysHowToStart(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := capsuleCLI(t, "agent", "list", "--data", dir)
	if code != exitInternal || !strings.Contains(errOut, "no node is running at data folder "+dir) || !strings.Contains(errOut, "capsule node --data "+dir) {
		t.Errorf("agent list without a node: exit %d, %q", code, errOut)
	}
}

// TestCompletionValues: flags complete their values, agent and peer IDs
// come from the node on --data.
func TestCompletionValues(t *testing.T) {
	dir := t.TempDir()
	n, err := node.New(node.Config{Dir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	st, err := n.CreateAgent(t.Context(), api.CreateAgentRequest{Name: "comp", Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	peer := "n" + strings.Repeat("b", 26)
	if err := n.AddPeer(t.Context(), api.Peer{ID: peer, Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"render", "x", "--provider", ""}, []string{"openai-chat", "openai-responses", "anthropic", "gemini", "ollama"}},
		{[]string{"log", "x", "--kind", "tool_"}, []string{"tool_call", "tool_result", "tool_dispatch"}},
		{[]string{"log", "append", "x", "--kind", "mo"}, []string{"model_change", "moved"}},
		{[]string{"agent", "status", "--data", dir, ""}, []string{st.ID}},
		{[]string{"move", "--data", dir, st.ID[:4]}, []string{st.ID}},
		{[]string{"move", st.ID, "--data", dir, "--to", ""}, []string{peer}},
		{[]string{"node", "peer", "rm", "--data", dir, ""}, []string{peer}},
	} {
		out := mustCLI(t, append([]string{cobraComplete}, c.args...)...)
		got := completions(out)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("complete %v (-want +got):\n%s", c.args, diff)
		}
	}
}

const cobraComplete = "__complete"

// completions are the values of cobra's __complete output, without their
// descriptions and the directive line.
func completions(out string) []string {
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue
		}
		v, _, _ := strings.Cut(l, "\t")
		got = append(got, v)
	}
	return got
}
