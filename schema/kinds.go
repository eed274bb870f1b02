package schema

// registry is the history of every kind. A version's Since is the release
// that first wrote it; a version with no Since is designed (its steps exist and are
// tested) but no release writes it yet. Readers switch to it, and Current
// moves up, in the release that changes its writer.
var registry = histories()

func histories() map[Kind]History {
	m := map[Kind]History{}
	for _, h := range []History{
		{Kind: Manifest, Where: "manifest.json: format and schemas.manifest", Floor: 1, Current: 1, Versions: []Version{
			{1, "identity, holder, per-kind schema versions, writer, digests of the layout files, committed journal", "0.1.0"},
		}},
		{Kind: Journal, Where: "memory/timeline_events.jsonl: v of every event, and schemas.journal (the highest v committed)", Floor: 1, Current: 2, Versions: []Version{
			{1, "RFC 8785 envelope with per-machine chains, Lamport clocks and epochs; conversation and move kinds", "0.1.0"},
			{2, "same envelope; adds tool_dispatch, approval_request, approval, effect_outcome and tool_mapping; tool_result gains interrupted and outcome", "0.3.0"},
		}},
		{Kind: Session, Where: "memory/working_memory.md: schemas.session", Floor: 1, Current: 1, Versions: []Version{
			{1, "the agent's notes, UTF-8 Markdown", "0.1.0"},
		}},
		{Kind: MemoryIndex, Where: "memory/vector_index/index.json: version, and schemas.memory_index", Floor: 1, Current: 2, Versions: []Version{
			{1, "placeholder: version and an entries array, always empty", "0.1.0"},
			{2, "derived index: embedder fingerprint, source watermark, chunks with source, text digest and a base64 vector", "0.2.0"},
		}},
		{Kind: Environment, Where: "environment/spec.json: version, and schemas.environment", Floor: 1, Current: 2, Versions: []Version{
			{1, "workdir, env, secret names, tools to start, sandbox network, packages and limits", "0.1.0"},
			{2, "tools with effect classes and approval rules, MCP servers, tool mappings, sandbox mode, allowed hosts and limits, lifecycle", "0.2.0"},
		}},
		{Kind: Snapshot, Where: "artifacts/snapshot.json: version, and schemas.snapshot", Floor: 1, Current: 1, Versions: []Version{
			{1, "sorted entries of files (size, blob, exec), directories and relative symbolic links", "0.1.0"},
		}},
		{Kind: Coordination, Where: "manifest.json holder, and the move protocol's records on the wire", Floor: 1, Current: 1, Versions: []Version{
			{1, "holder node and fencing epoch; the move protocol of PROTOCOL.md", "0.1.0"},
		}},
		{Kind: HolderLog, Where: "DATA/agents/<id>/holder.jsonl: v of every signed record (before record logs: holder.json)", Floor: 1, Current: 1, Versions: []Version{
			{1, "signed transfer.Target records, newest last", "0.1.0"},
		}},
		{Kind: SourceLog, Where: "DATA/agents/<id>/source.jsonl: v of every signed record (before record logs: source.json)", Floor: 1, Current: 1, Versions: []Version{
			{1, "signed transfer.Source records of the latest move, newest last", "0.1.0"},
		}},
		{Kind: AgentMeta, Where: "DATA/agents/<id>/agent.json: v and release (from 0.2.0; absent: version 1 written by 0.1.0)", Floor: 1, Current: 1, Versions: []Version{
			{1, "name, run, removed and removed_at", "0.1.0"},
		}},
		{Kind: Shadow, Where: "DATA/agents/<id>/shadow.json: v and release (from 0.3.0, after its fixtures were made; absent: version 1)", Floor: 1, Current: 1, Versions: []Version{
			{1, "digest of the manifest the shadow reflects and of its layout files", "0.1.0"},
		}},
		{Kind: StatCache, Where: "DATA/agents/<id>/statcache.json: version", Floor: 1, Current: 1, Versions: []Version{
			{1, "the workspace's stat keys and blob digests, a cache: discarded when unreadable", "0.1.0"},
		}},
		{Kind: Peers, Where: "DATA/peers.json: v", Floor: 1, Current: 1, Versions: []Version{
			{1, "trusted peers: node ID and address", "0.1.0"},
		}},
		{Kind: HostRecord, Where: "DATA/node.lock.json and a capsule's host record: v", Floor: 1, Current: 1, Versions: []Version{
			{1, "the serving process: node ID, PID, addresses, release", "0.1.0"},
		}},
		{Kind: NodeKey, Where: "DATA/node.key: PEM, no version member (version 1)", Floor: 1, Current: 1, Versions: []Version{
			{1, "ed25519 private key, PEM PKCS#8", "0.1.0"},
		}},
		{Kind: Secrets, Where: "DATA/secrets.json: operator-written, no version member (version 1)", Floor: 1, Current: 1, Versions: []Version{
			{1, "secret values by name", "0.1.0"},
		}},
		{Kind: ToolMark, Where: "DATA/agents/<id>/tool-running.json: v and release (from 0.2.0; absent file: no tool running)", Floor: 1, Current: 1, Versions: []Version{
			{1, "the call whose tool the runner runs, and the epoch; removed when its result is journaled", "0.2.0"},
		}},
	} {
		m[h.Kind] = h
	}
	return m
}
