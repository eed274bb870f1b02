package api

import (
	"encoding/json"

	"github.com/agentcapsule/capsule/digest"
)

// NodeInfo describes a node.
type NodeInfo struct {
	ID      string `json:"id"`
	Listen  string `json:"listen"` // node-to-node (mTLS) address, host:port
	Release string `json:"release"`
	Agents  int    `json:"agents"`
	// Readiness is the node's start-up canary pass and whether it is ready
	// (nil from a node of an earlier release).
	Readiness *Readiness `json:"readiness,omitempty"`
}

// Readiness reports a node's canary pass (FORMAT §11.10): every embedded
// fixture and every capsule of the operator's canary folder read through
// the full read path, and the schema versions of the capsules the node
// holds. Until Ready the node resumes no agent and refuses incoming moves.
type Readiness struct {
	// Ready is true once the pass is done and every capsule passed.
	Ready bool `json:"ready"`
	// Reason says why the node is not ready ("" when it is).
	Reason string `json:"reason,omitempty"`
	// Checked lists each capsule the pass read, in order.
	Checked []CanaryCheck `json:"checked"`
	// Counts counts the capsules the node holds per (kind, version).
	Counts []SchemaCount `json:"counts"`
}

// CanaryCheck is one capsule the canary pass read.
type CanaryCheck struct {
	// Source is "embedded" (a fixture built into the binary) or "canary"
	// (a folder of the operator's --canary DIR).
	Source string `json:"source"`
	// Name is "<release>/<name>" for a fixture, the folder's path for a canary.
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Problem is the refusal or the first problems found, when not OK.
	Problem string `json:"problem,omitempty"`
}

// SchemaCount is how many held capsules have one kind of state at one
// schema version.
type SchemaCount struct {
	Kind     string `json:"kind"`
	Version  int    `json:"version"`
	Capsules int    `json:"capsules"`
}

// Peer is a trusted node: its ID pins its key and Addr is where it listens.
type Peer struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// CreateAgentRequest asks the node to create and start hosting a new agent.
type CreateAgentRequest struct {
	Name string `json:"name,omitempty"`
	// From is a workspace folder on the node's machine to snapshot into the
	// new capsule; empty for an empty workspace.
	From string `json:"from,omitempty"`
	// Stopped creates the agent without starting it.
	Stopped bool `json:"stopped,omitempty"`
	// Model, if set, is journaled as the agent's first model_change: the
	// model a move's target renders the journal for when it prepares.
	Model *ModelRef `json:"model,omitempty"`
	// Task, if set, is journaled as the agent's first user message after
	// the model: what the agent works on from its first step.
	Task string `json:"task,omitempty"`
	// Spec, if set, is the agent's environment spec (docs/FORMAT.md §6,
	// §11.7.1): its MCP servers, approval rules, sandbox and secret names.
	// Empty gives the default spec. A version-1 spec is migrated up.
	Spec json.RawMessage `json:"spec,omitempty"`
}

// ModelRef names a model the way the journal's model_change event does.
type ModelRef struct {
	Provider string `json:"provider"`      // e.g. "ollama", "openai", "anthropic", "google"
	API      string `json:"api,omitempty"` // the provider's API: "chat", "responses", "messages", "generateContent"
	Model    string `json:"model"`         // the provider's model name
}

// Agent states reported by AgentStatus.State.
const (
	StateRunning  = "running"  // the runner is stepping
	StateStopped  = "stopped"  // held here, not running (operator stop)
	StateFrozen   = "frozen"   // held here, stopped for a move in progress
	StateRetired  = "retired"  // held here once, handed to another node (RETIRED source record)
	StateBlocked  = "blocked"  // refused to run here, with the reason (e.g. holder record invalid)
	StateIncoming = "incoming" // not held here: a move into this node is pending, or pre-copied data of one is here
)

// AgentStatus is what a node knows about one agent.
type AgentStatus struct {
	ID        string `json:"id"`
	Name      string `json:"name,omitempty"`
	Node      string `json:"node"`   // the node answering
	Holder    string `json:"holder"` // the holder named by the record on this node
	Epoch     uint64 `json:"epoch"`
	State     string `json:"state"`
	Steps     uint64 `json:"steps"`  // runner steps taken on this node since it started
	Events    int    `json:"events"` // journal events in the capsule on this node
	Successor string `json:"successor,omitempty"`
	Error     string `json:"error,omitempty"`
	Blocked   string `json:"blocked,omitempty"` // why the node will not run it (State "blocked")
	// Activity is what a running agent's loop does: "working", "idle"
	// (waiting for a user message) or "blocked" (State is then "blocked"
	// too, and Blocked says why: a new message, model change or start
	// tries again).
	Activity string      `json:"activity,omitempty"`
	Model    *ModelRef   `json:"model,omitempty"` // the journal's current model, if any
	Move     *MoveStatus `json:"move,omitempty"`
	// Waiting lists the calls the agent waits on for approval (Activity
	// "waiting" while it runs); it comes from the journal, so a stopped or
	// frozen agent shows it too.
	Waiting []WaitingApproval `json:"waiting,omitempty"`
	// Unresolved lists external calls whose outcome is unknown until an
	// operator records it (capsule agent effect).
	Unresolved []UnresolvedEffect `json:"unresolved,omitempty"`
	// Sandbox is where the running agent's tool processes run: "bwrap",
	// "landlock", or "none: " and why (then run is not offered and stdio
	// MCP servers do not start), or "none (unsandboxed: ...)" when the
	// spec says sandbox none and the node allows it.
	Sandbox string `json:"sandbox,omitempty"`
}

// MoveRequest asks the node to move an agent it holds to another node.
type MoveRequest struct {
	To string `json:"to"` // the target's node ID; it must be a peer
}

// Move phases reported in MoveProgress.Phase.
const (
	PhasePrecopy  = "precopy"
	PhaseFreeze   = "freeze"
	PhaseOffer    = "offer"
	PhaseTransfer = "transfer"
	PhasePrepare  = "prepare"
	PhaseActivate = "activate"
	PhaseResolve  = "resolve"
	PhaseDone     = "done"
	// PhaseAborting is the MoveStatus of a move the source rolled back
	// while it still asks the target to discard the move's staging: the
	// agent runs here again, and a new move is refused until the target
	// answers (or `capsule move resolve --force` gives the abort up).
	PhaseAborting = "aborting"
	// PhaseNone is the MoveStatus of an agent that never moved from this
	// node (the other fields are empty).
	PhaseNone = "none"
)

// MoveProgress is one progress report of a running move.
type MoveProgress struct {
	Phase        string `json:"phase"`
	BytesSent    int64  `json:"bytes_sent"`
	BlobsSent    int    `json:"blobs_sent"`
	BlobsSkipped int    `json:"blobs_skipped"`
}

// Move outcomes reported in MoveResult.Outcome and MoveStatus.Outcome.
const (
	OutcomeCommitted  = "committed"   // the target runs the agent; this node retired it
	OutcomeRolledBack = "rolled_back" // nothing changed; the agent runs here again
	OutcomeStale      = "stale"       // the target holds a newer epoch: this node is a zombie
	OutcomeWaiting    = "waiting"     // activate was sent and its fate is unknown: frozen, retrying resolve
)

// MoveResult is the final report of a move.
type MoveResult struct {
	Agent        string `json:"agent"`
	MoveID       string `json:"move_id"`
	From         string `json:"from"`
	To           string `json:"to"`
	Epoch        uint64 `json:"epoch"` // the epoch the move offered
	Outcome      string `json:"outcome"`
	Reason       string `json:"reason,omitempty"`
	FrozenMS     int64  `json:"frozen_ms"`
	BytesSent    int64  `json:"bytes_sent"`
	BlobsSent    int    `json:"blobs_sent"`
	BlobsSkipped int    `json:"blobs_skipped"`
	// BlobsDelta counts the delta frames sent (docs/PROTOCOL.md §4a):
	// blobs that travelled compressed against a version the target held.
	// Their compressed bytes are in BytesSent.
	BlobsDelta       int `json:"blobs_delta,omitempty"`
	RoundTripsFrozen int `json:"round_trips_frozen"`
	PrecopyRounds    int `json:"precopy_rounds"`
	// WindowBytes counts the bytes sent inside the frozen window (the
	// delta the prepare request carried).
	WindowBytes int64 `json:"window_bytes"`
	// Render is what the target's prepare rendered; nil when the target
	// did not report one.
	Render *RenderReport `json:"render,omitempty"`
	// CancelledModelCalls counts the model calls in flight the freeze
	// cancelled: their output was not journaled yet, so the agent makes
	// them again on the target (or here, after a rollback).
	CancelledModelCalls int `json:"cancelled_model_calls,omitempty"`
}

// RenderReport is the target's render of the journal during a move's
// prepare (docs/PROTOCOL.md §3, phase 4): the request body for the
// agent's current model, built and thrown away to prove the target can
// serve the agent's next step.
type RenderReport struct {
	// Model is the newest model_change of the journal; nil when the journal
	// has none (then nothing was rendered, and Note says so).
	Model *ModelRef `json:"model,omitempty"`
	// RenderAPI is the wire format rendered ("ollama", "openai-chat", ...).
	RenderAPI string `json:"render_api,omitempty"`
	// Events is the number of journal events rendered from.
	Events int `json:"events"`
	// Bytes is the size of the rendered request body.
	Bytes int `json:"bytes"`
	// Tokens is the render's token estimate of the request.
	Tokens int `json:"tokens,omitempty"`
	// Micros is how long the render took on the target, in microseconds.
	Micros int64 `json:"micros"`
	// Note explains a render that did not happen.
	Note string `json:"note,omitempty"`
}

// MoveStatus is the state of the latest move of an agent on this node.
type MoveStatus struct {
	MoveID  string `json:"move_id"`
	To      string `json:"to"`
	Epoch   uint64 `json:"epoch"`
	Phase   string `json:"phase"`
	Outcome string `json:"outcome,omitempty"` // empty while the move runs
	Reason  string `json:"reason,omitempty"`
}

// ResolveRequest asks the node to settle an agent's unresolved move.
//
// Without Force the node asks the target which epoch it holds, with a
// fencing resolve (docs/PROTOCOL.md). With Force the operator overrides: the
// node burns a new epoch, takes the agent back and records who forced it.
type ResolveRequest struct {
	Force bool   `json:"force,omitempty"`
	By    string `json:"by,omitempty"` // who forced it, recorded with the override
}

// moveStreamLine is one line of the NDJSON body answering a move request:
// progress lines, then exactly one result or error line.
type moveStreamLine struct {
	Progress *MoveProgress `json:"progress,omitempty"`
	Result   *MoveResult   `json:"result,omitempty"`
	Error    *Error        `json:"error,omitempty"`
}

// PushReply reports what a push stream stored, and the replies to the
// message that ended it, if any.
type PushReply struct {
	Stored   int       `json:"stored"`           // blobs newly stored
	Present  int       `json:"present"`          // blobs that were already there
	Journal  int       `json:"journal"`          // journal events appended
	Bytes    int64     `json:"bytes"`            // content bytes read from the stream
	Deltas   int       `json:"deltas,omitempty"` // blobs stored from delta frames (counted in Stored)
	Messages []Message `json:"messages"`         // replies to the stream's message frame
	// Render is what the receiver rendered while preparing, when the
	// stream's message was a prepare it prepared.
	Render *RenderReport `json:"render,omitempty"`
}

// Message is one move-protocol message, opaque to this package. Call names
// the message kind (e.g. "offer", "activate") for logs, metrics and fault
// injection; Body is the JSON package transfer defines.
type Message struct {
	Call string          `json:"call"`
	Body json.RawMessage `json:"body"`
	// Inventory, when InventoryManifest, says the request's inventory is
	// the one its manifest digest names (the manifest, each layout file it
	// lists and each blob its snapshot references): the blob list is not
	// on the wire and the receiver rebuilds it from its store, or refuses.
	Inventory string `json:"inventory,omitempty"`
	// Bases, on a reply, lists blobs the replying node holds that a later
	// push may use as the base of a delta frame (the snapshot.json of its
	// shadow, for one).
	Bases []digest.Digest `json:"bases,omitempty"`
}

// InventoryManifest is the value of Message.Inventory for an inventory
// derived from the message's manifest.
const InventoryManifest = "manifest"

// Replies are the messages a peer answers one message with (zero or more).
type Replies struct {
	Messages []Message `json:"messages"`
}
