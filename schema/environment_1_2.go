package schema

import "fmt"

func init() {
	register(Step{Kind: Environment, From: 1, To: 2, Apply: environment1to2,
		Summary: "each tool becomes a stdio MCP server with effect external and approval required; network narrows to none; sandbox required; not ephemeral"})
}

// environment1to2 migrates a version-1 spec to version 2 with the narrowest
// authority (FORMAT §11.7). Version 1 could not say what a tool does or
// whether it needs approval, and release 0.1.0 ran no tool and enforced no
// network, so no agent held authority that version 2 must keep:
//   - every tool (a process started beside the agent) becomes a stdio MCP
//     server whose tools are external and need approval;
//   - the network becomes none, with the version-1 value kept in
//     migrated.network for the down step (version 2 reaches hosts only
//     when they are listed, and version 1 listed none);
//   - the sandbox is required, the agent is not ephemeral, there are no
//     built-in tool rules and no tool mappings.
//
// Nothing else changes, so the step is not destructive: environment2to1
// gives the input back byte for byte.
func environment1to2(b []byte) ([]byte, error) {
	var s specV1
	if err := decodeStrict(b, &s); err != nil {
		return nil, err
	}
	if s.Version != 1 {
		return nil, fmt.Errorf("%w: version %d, want 1", ErrInput, s.Version)
	}
	out := specV2{
		Version: 2, Workdir: s.Workdir, Env: nonNilMap(s.Env), Secrets: nonNilSlice(s.Secrets),
		MCPServers: []mcpServerV2{}, Tools: map[string]ruleV2{}, ToolMappings: map[string]string{},
		Sandbox: sandboxV2{Mode: "required", Network: "none", Hosts: []string{},
			Packages: s.Sandbox.Packages, CPUs: s.Sandbox.CPUs, MemoryMB: s.Sandbox.MemoryMB},
	}
	switch s.Sandbox.Network {
	case "none":
	case "loopback", "full":
		out.Migrated = &migratedV2{From: 1, Network: s.Sandbox.Network}
	default:
		return nil, fmt.Errorf("%w: sandbox.network %q", ErrInput, s.Sandbox.Network)
	}
	for _, t := range s.Tools {
		out.MCPServers = append(out.MCPServers, mcpServerV2{Name: t.Name, Transport: "stdio", Command: t.Command,
			Args: t.Args, Env: t.Env, Secrets: t.Secrets, Effect: EffectExternal, Approval: ApprovalRequired})
	}
	return encodeIndented(out)
}
