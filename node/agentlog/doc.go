// Package agentlog owns an agent's journal as a node keeps it: the file
// memory/timeline_events.jsonl of the capsule it hosts, or the journal copy
// an incoming move builds, opened through journal/logfile for this node's
// machine (Log: durable appends fenced at the holder epoch, imports of a
// move's tail), checked against the capsule's manifest in the same
// streaming pass that opens it (OpenChecked), and the index of the blobs
// its attachments name (Attachments), kept up to date as the journal grows
// so that a move never rescans it inside its frozen window.
//
// It knows nothing of moves, runners, peers or the node's other state, and
// must not import any package of the node. A Log is safe for concurrent
// use (logfile.Log's own lock); an Attachments index is not: the caller
// serialises its use (node holds the agent's lock).
package agentlog
