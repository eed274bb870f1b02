//go:build linux

package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/sandbox"
	"github.com/agentcapsule/capsule/schema"
)

// probed returns this host's sandbox (bwrap, else landlock), probed once
// per test.
func probed(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.Probe("")
	must(t, err)
	t.Cleanup(func() { sb.Close() })
	if sb.Kind() == sandbox.KindNone {
		t.Fatalf("no sandbox (%s=%q) on this host: %s", sandbox.ForceEnv, os.Getenv(sandbox.ForceEnv), sb.Reason())
	}
	return sb
}

func runCall(t *testing.T, f *fixture, args string) Result {
	t.Helper()
	return f.w.Run(context.Background(), RunCommand, json.RawMessage(args))
}

// TestRunOutput runs under each kind of sandbox: the result reads the same.
func TestRunOutput(t *testing.T) {
	for _, kind := range []string{sandbox.KindBwrap, sandbox.KindLandlock} {
		t.Run(kind, func(t *testing.T) {
			t.Setenv(sandbox.ForceEnv, kind)
			testRunOutput(t, probed(t))
		})
	}
}

func testRunOutput(t *testing.T, sb *sandbox.Sandbox) {
	f := newFixture(t, Options{Sandbox: sb}, map[string]string{"in.txt": "from the workspace\n"})
	for _, tc := range []struct {
		name, args, want string
		isErr            bool
	}{
		{"stdout and stderr apart", `{"command":"echo out; echo err >&2; cat in.txt"}`,
			"exit status: 0\n--- stdout ---\nout\nfrom the workspace\n\n--- stderr ---\nerr", false},
		{"exit status", `{"command":"echo partial; exit 3"}`,
			"exit status: 3\n--- stdout ---\npartial\n\n--- stderr ---\n", false},
		{"runs in the workspace", `{"command":"pwd; echo $HOME"}`,
			"exit status: 0\n--- stdout ---\n" + f.ws + "\n" + f.ws + "\n\n--- stderr ---\n", false},
		{"timeout", `{"command":"echo started; sleep 30; echo never","timeout_seconds":1}`,
			"timed out after 1s: the command and everything it started were killed\n--- stdout ---\nstarted\n\n--- stderr ---\n", true},
		{"signal", `{"command":"kill -9 $$"}`,
			"exit status: 137 (killed by signal 9: killed)\n--- stdout ---\n\n--- stderr ---\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCall(t, f, tc.args)
			if diff := cmp.Diff(tc.want, r.Content); diff != "" || r.IsError != tc.isErr {
				t.Errorf("content (-want +got):\n%s\nIsError %v, want %v", diff, r.IsError, tc.isErr)
			}
		})
	}
}

func TestRunWritesWorkspaceOnly(t *testing.T) {
	f := newFixture(t, Options{Sandbox: probed(t)}, nil)
	r := runCall(t, f, `{"command":"echo made > made.txt; echo x > `+filepath.Join(f.outside, "planted.txt")+`"}`)
	if b, err := os.ReadFile(filepath.Join(f.ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("workspace file: %q, %v (result %q)", b, err, r.Content)
	}
	if _, err := os.Stat(filepath.Join(f.outside, "planted.txt")); err == nil {
		t.Errorf("the command wrote outside the workspace (result %q)", r.Content)
	}
}

// Each stream is cut to half of MaxOutput; the whole of both is attached.
func TestRunCap(t *testing.T) {
	f := newFixture(t, Options{Sandbox: probed(t), MaxOutput: 400}, nil)
	r := runCall(t, f, `{"command":"seq 1 1000; echo small >&2"}`)
	if !strings.Contains(r.Content, "[stdout truncated: showing ") || !strings.HasSuffix(r.Content, "--- stderr ---\nsmall") {
		t.Errorf("content %q: want stdout cut and stderr whole", r.Content)
	}
	if len(r.Content) > 400+200 {
		t.Errorf("content is %d bytes, over the cap", len(r.Content))
	}
	if !strings.Contains(string(r.Full), "\n999\n1000\n\n--- stderr ---\nsmall") || r.MediaType == "" {
		t.Errorf("Full %.80q… lacks the whole output (media type %q)", r.Full, r.MediaType)
	}
}

// The command is killed when it writes past the policy's output limit.
func TestRunOutputLimit(t *testing.T) {
	f := newFixture(t, Options{Sandbox: probed(t), Policy: sandbox.Policy{Limits: sandbox.Limits{OutputBytes: 5000}}}, nil)
	r := runCall(t, f, `{"command":"yes"}`)
	if !r.IsError || !strings.HasPrefix(r.Content, "killed: it wrote more than 5000 bytes of output") {
		t.Errorf("result %.200q (IsError %v)", r.Content, r.IsError)
	}
}

func TestRunRefused(t *testing.T) {
	f := newFixture(t, Options{}, nil)
	for _, tl := range f.w.Tools() {
		if tl.Name == RunCommand {
			t.Errorf("run is offered without a sandbox")
		}
	}
	if r := runCall(t, f, `{"command":"true"}`); !r.IsError || !strings.Contains(r.Content, "no sandbox was set up") {
		t.Errorf("without a sandbox: %q", r.Content)
	}
	t.Setenv(sandbox.ForceEnv, "no-such-kind")
	none, err := sandbox.Probe("")
	must(t, err)
	defer none.Close()
	f = newFixture(t, Options{Sandbox: none}, nil)
	r := runCall(t, f, `{"command":"echo ran > ran.txt"}`)
	if !r.IsError || !strings.Contains(r.Content, "no sandbox works on this node") || !strings.Contains(r.Content, "no-such-kind") {
		t.Errorf("with no working sandbox: %q", r.Content)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "ran.txt")); err == nil {
		t.Errorf("the command ran unsandboxed")
	}
	f = newFixture(t, Options{Sandbox: none, Policy: sandbox.Policy{Unsandboxed: true}}, nil)
	if r := runCall(t, f, `{"command":"echo ran"}`); r.IsError || !strings.Contains(r.Content, "ran") {
		t.Errorf("unsandboxed by policy: %q", r.Content)
	}
}

func TestRunDeclared(t *testing.T) {
	f := newFixture(t, Options{Sandbox: probed(t)}, nil)
	tools := f.w.Tools()
	last := tools[len(tools)-1]
	if last.Name != RunCommand || len(last.Description) < 200 {
		t.Errorf("last tool %q, description %q", last.Name, last.Description)
	}
	for _, args := range []string{`{}`, `{"command":""}`, `{"command":"true","timeout_seconds":0}`, `{"command":"true","x":1}`} {
		if r := runCall(t, f, args); !r.IsError || !strings.Contains(r.Content, "invalid arguments") {
			t.Errorf("%s: %q", args, r.Content)
		}
	}
}

func TestRunEffect(t *testing.T) {
	for _, tc := range []struct {
		p    sandbox.Policy
		want string
	}{
		{sandbox.Policy{}, schema.EffectWorkspace},
		{sandbox.Policy{Network: sandbox.NetworkNone}, schema.EffectWorkspace},
		{sandbox.Policy{Network: sandbox.NetworkHosts, Hosts: []string{"api.github.com:443"}}, schema.EffectExternal},
		{sandbox.Policy{Unsandboxed: true}, schema.EffectExternal},
	} {
		if got := RunEffect(tc.p); got != tc.want {
			t.Errorf("RunEffect(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}
