package mcp_test

import (
	"path/filepath"

	"context"
	"encoding/json"
	"github.com/agentcapsule/capsule/sandbox"
	"os"
	"os/exec"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/mcp"
)

// benchLaunch is the Launcher the benchmarks start servers with:
// mcp.Exec; with $MCP_BENCH_WRAP=sandbox, the node's sandbox (package
// sandbox, probed here) with the server's folder as its workspace, as the
// node starts a stdio server; with another $MCP_BENCH_WRAP, mcp.Exec of
// that command line (split at spaces) followed by the server's argv, e.g.
// MCP_BENCH_WRAP="bwrap --unshare-all --die-with-parent --ro-bind / / --".
func benchLaunch() mcp.Launcher {
	wrap := strings.Fields(os.Getenv("MCP_BENCH_WRAP"))
	if len(wrap) == 0 {
		return mcp.Exec
	}
	if len(wrap) == 1 && wrap[0] == "sandbox" {
		sb, err := sandbox.Probe("")
		return func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
			if err != nil {
				return nil, err
			}
			p := sandbox.Policy{Workspace: filepath.Dir(argv[0]), Env: env,
				Limits: sandbox.Limits{Processes: 256, MemoryMB: 4096, DiskMB: 4096}}
			return sb.Command(ctx, p, argv)
		}
	}
	return func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
		return mcp.Exec(ctx, append(append([]string(nil), wrap...), argv...), env, dir)
	}
}

// BenchmarkCall is one MCP tool call round trip: counter.echo on a running
// stdio server.
func BenchmarkCall(b *testing.B) {
	s, err := mcp.Start(b.Context(), mcp.Config{Launch: benchLaunch(), Servers: []envspec.Tool{stdio(b, "counter", "counter", nil)}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	args := json.RawMessage(`{"text":"ping"}`)
	for b.Loop() {
		if r := s.Call(b.Context(), "counter.echo", args); r.IsError || r.Content != "ping" {
			b.Fatalf("call: %+v", r)
		}
	}
}

// BenchmarkStart is a server's start and stop: launch, initialize, list
// its tools (two pages), close.
func BenchmarkStart(b *testing.B) {
	cfg := mcp.Config{Launch: benchLaunch(), Servers: []envspec.Tool{stdio(b, "counter", "counter", nil)}}
	for b.Loop() {
		s, err := mcp.Start(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkCallSDK is BenchmarkCall's comparator: the same round trip
// with the SDK's own stdio client (mcp.CommandTransport), no Set around it.
func BenchmarkCallSDK(b *testing.B) {
	cmd, err := benchLaunch()(b.Context(), []string{binary(b, "counter")}, nil, "")
	if err != nil {
		b.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "v1"}, nil).Connect(b.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"text":"ping"}`)}
	for b.Loop() {
		if r, err := cs.CallTool(b.Context(), params); err != nil || r.IsError {
			b.Fatalf("call: %v %+v", err, r)
		}
	}
}
