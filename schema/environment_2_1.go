package schema

import "fmt"

func init() {
	register(Step{Kind: Environment, From: 2, To: 1, Apply: environment2to1, Destructive: true,
		Summary: "stdio MCP servers become tools; rules, mappings, hosts, limits, lifecycle and memory settings are dropped (0.1.0 runs no tool); an HTTP server is refused"})
}

// environment2to1 is the view of a version-2 spec that release 0.1.0 reads,
// for a rollback or a move to a 0.1.0 node. It never widens authority:
// 0.1.0 starts no tool and enforces no network, and what it drops comes
// back from environment1to2 at least as narrow (approval required, effect
// external, network none, sandbox required, not ephemeral). The network is
// the version-1 value migrated.network kept, else none. It refuses an HTTP
// MCP server, which version 1 cannot name, so the agent would lose the
// server for good when upgraded again. The step drops information, so the
// exact old state comes from the original bytes kept by the migration
// (FORMAT §11.5), not from this step.
func environment2to1(b []byte) ([]byte, error) {
	var s specV2
	if err := decodeStrict(b, &s); err != nil {
		return nil, err
	}
	if s.Version != 2 {
		return nil, fmt.Errorf("%w: version %d, want 2", ErrInput, s.Version)
	}
	out := specV1{Version: 1, Workdir: s.Workdir, Env: nonNilMap(s.Env), Secrets: nonNilSlice(s.Secrets), Tools: []toolV1{},
		Sandbox: sandboxV1{Network: "none", Packages: s.Sandbox.Packages, CPUs: s.Sandbox.CPUs, MemoryMB: s.Sandbox.MemoryMB}}
	if m := s.Migrated; m != nil && (m.Network == "loopback" || m.Network == "full") {
		out.Sandbox.Network = m.Network
	}
	for i, m := range s.MCPServers {
		if m.Transport != "stdio" {
			return nil, fmt.Errorf("%w: mcp_servers[%d] %q uses transport %q; version 1 names only processes", ErrNotExpressible, i, m.Name, m.Transport)
		}
		out.Tools = append(out.Tools, toolV1{Name: m.Name, Command: m.Command, Args: m.Args, Env: m.Env, Secrets: m.Secrets})
	}
	return encodeIndented(out)
}
