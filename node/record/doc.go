// Package record owns the durable records a node keeps in an agent's
// folder (DATA/agents/<agentID>/) beside its capsule: the signed record
// logs of the move protocol (holder.jsonl, the agent's transfer.Target;
// source.jsonl, this node's latest move of it as transfer.Source) and the
// agent's metadata (agent.json: name, run intent, removal), each with its
// schema version and writer (FORMAT §11, PROTOCOL §5).
//
// It writes and reads one file at a time, durably (append and fsync, or an
// atomic rewrite), and verifies what it reads: a record that does not
// verify, or was signed by another node or for another agent, fails
// closed. It knows nothing of moves in progress, runners, peers or the
// node's other state, and must not import any package of the node but
// node/ident. It holds no state and no locks: the caller serialises the
// writes of one agent's files (node holds the agent's lock).
package record
