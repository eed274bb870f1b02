package transfer

import "github.com/agentcapsule/capsule/digest"

// Ready is what one Step asks of the host, in this order:
//
//  1. Records: make every record durable, in order, BEFORE anything else
//     in this Ready happens. If persisting fails, do nothing else of this
//     Ready and feed InPersistFailed.
//  2. Messages: send them (a Source's are requests to the peer; a
//     Target's is the reply to the request being handled).
//  3. Actions: perform them and feed each result back as an Input.
//
// Messages and Actions of one Ready are independent of each other and may
// run in either order or concurrently. Outcome is set in the Ready where the
// source's verdict changes (it may go from OutcomeWaiting to a final one).
type Ready struct {
	Records  []Record  `json:"records,omitempty"`
	Messages []Message `json:"messages,omitempty"`
	Actions  []Action  `json:"actions,omitempty"`
	Outcome  Outcome   `json:"outcome,omitempty"`
}

// Empty reports whether r asks nothing of the host.
func (r Ready) Empty() bool {
	return len(r.Records) == 0 && len(r.Messages) == 0 && len(r.Actions) == 0 && r.Outcome == ""
}

func (r *Ready) persist(rec Record)  { r.Records = append(r.Records, rec) }
func (r *Ready) send(m Message)      { r.Messages = append(r.Messages, m) }
func (r *Ready) act(a Action)        { r.Actions = append(r.Actions, a) }
func (r *Ready) merge(o Ready) Ready { return mergeReady(*r, o) }

func mergeReady(a, b Ready) Ready {
	a.Records = append(a.Records, b.Records...)
	a.Messages = append(a.Messages, b.Messages...)
	a.Actions = append(a.Actions, b.Actions...)
	if b.Outcome != "" {
		a.Outcome = b.Outcome
	}
	return a
}

// Outcome is a source's verdict on its move.
type Outcome string

// The outcomes.
const (
	// OutcomeCommitted: the target holds the agent; the source retired.
	OutcomeCommitted Outcome = "committed"
	// OutcomeRolledBack: the move failed before the point of no return (or
	// Resolve aborted it); the source resumed at its old epoch.
	OutcomeRolledBack Outcome = "rolled_back"
	// OutcomeStale: the target holds or has seen a newer epoch: this
	// source is a zombie. It stays frozen; an operator decides.
	OutcomeStale Outcome = "stale"
	// OutcomeWaiting: activate was sent and the target cannot be reached.
	// The source stays frozen and keeps resolving (availability is lost,
	// never correctness). Not final.
	OutcomeWaiting Outcome = "waiting"
	// OutcomeForced: an operator forced the source to resume at a new
	// epoch (InForce).
	OutcomeForced Outcome = "forced"
)

// Final reports whether o ends the move (everything but OutcomeWaiting and "").
func (o Outcome) Final() bool { return o != "" && o != OutcomeWaiting }

// ActionKind names something the host must do.
type ActionKind string

// The actions. The result of each action marked "result:" must be fed back.
const (
	// ActInventory (source): report the agent's current inventory while it
	// still runs (pre-copy). Result: InInventory.
	ActInventory ActionKind = "inventory"
	// ActPush (source): stream Blobs to Peer's CAS store (pre-copy; PUT by
	// digest, idempotent) and the journal events after JournalFrom.
	// Result: InPushed.
	ActPush ActionKind = "push"
	// ActFreeze (source): stop the agent at a step boundary, sync its
	// journal, snapshot the workspace into blobs and write the manifest,
	// then report the frozen inventory. Result: InFrozen.
	ActFreeze ActionKind = "freeze"
	// ActResume (source): run the agent again at Epoch (its old epoch after
	// a rollback, a new one after a force; write the holder record first
	// if Epoch changed).
	ActResume ActionKind = "resume"
	// ActRetire (source): the agent now lives on Peer at Epoch; stop
	// hosting it here (keep the frozen copy read-only or delete it), and
	// feed InRelease to this node's Target for the agent.
	ActRetire ActionKind = "retire"
	// ActVerify (target): check the staged state of Move: every blob in
	// Blobs present with its digest and size, the manifest bytes' digest
	// equal to Manifest, the journal chain intact up to Journal.
	// Result: InVerified.
	ActVerify ActionKind = "verify"
	// ActPrepare (target): render the journal for the agent's current
	// model, materialize the workspace in staging, check that every
	// secret the environment spec names is available here and that every
	// schema version in the manifest is readable. Result: InPrepared.
	ActPrepare ActionKind = "prepare"
	// ActStart (target): promote the staging of Move to the live agent,
	// write the signed holder record for Epoch and start the agent. The
	// HOLDER record is already durable when this action is issued.
	ActStart ActionKind = "start"
	// ActDiscard (target): remove the staging of Move (blobs in the CAS
	// store may stay: they are content-addressed and harmless).
	ActDiscard ActionKind = "discard"
)

// Action is one thing the host must do. Fields an action does not use are empty.
type Action struct {
	Kind  ActionKind `json:"kind"`
	Agent string     `json:"agent"`
	Move  string     `json:"move"`
	// Epoch: ActResume (epoch to run at), ActRetire (successor's epoch),
	// ActStart (new holder epoch), ActDiscard/ActVerify/ActPrepare (move's epoch).
	Epoch uint64 `json:"epoch,omitempty"`
	// Peer is the other node (ActPush, ActRetire).
	Peer string `json:"peer,omitempty"`
	// Blobs: ActPush (to send), ActVerify (to check: the full inventory).
	Blobs []Blob `json:"blobs,omitempty"`
	// Manifest: ActVerify, ActPrepare.
	Manifest digest.Digest `json:"manifest,omitempty"`
	// Journal: ActVerify (head to check), ActPush (push up to here).
	Journal JournalPos `json:"journal,omitempty"`
	// JournalFrom: ActPush (push events after this position).
	JournalFrom JournalPos `json:"journal_from,omitempty"`
	// Stopped: ActPrepare, ActStart: the operator's intent the request
	// carried (Message.Stopped): the agent stays stopped once it is here.
	Stopped bool `json:"stopped,omitempty"`
}

// InputKind names what happened.
type InputKind string

// The inputs.
const (
	// InStart (source): begin the move. Inventory is the agent's current
	// inventory (it still runs).
	InStart InputKind = "start"
	// InMessage: a message arrived (a request for a Target, a reply for a
	// Source). For MsgHave and MsgOffer the host fills Missing and Journal.
	InMessage InputKind = "message"
	// InSendFailed (source): the last request was lost, the connection
	// failed, or no reply came in time. Counts as one failed attempt.
	InSendFailed InputKind = "send_failed"
	// InTick (source): time passed; retries a waiting Resolve or Abort.
	InTick InputKind = "tick"
	// InInventory (source): result of ActInventory.
	InInventory InputKind = "inventory"
	// InPushed (source): result of ActPush (OK or not).
	InPushed InputKind = "pushed"
	// InFrozen (source): result of ActFreeze (OK with Inventory, or not).
	InFrozen InputKind = "frozen"
	// InVerified (target): result of ActVerify (OK, or Problems).
	InVerified InputKind = "verified"
	// InPrepared (target): result of ActPrepare (OK, or Problems).
	InPrepared InputKind = "prepared"
	// InPersistFailed (both): the Records of the last Ready could not be
	// made durable (ENOSPC, EIO). Nothing of that Ready was done.
	InPersistFailed InputKind = "persist_failed"
	// InResolve (source): an operator asks to resolve now (resets the
	// retry count and sends MsgResolve or MsgAbort again).
	InResolve InputKind = "resolve"
	// InForce (source): an operator forces a waiting or stale source to
	// resume at a new epoch (above every epoch it offered), recording
	// Operator. Outside the guarantee: see docs/PROTOCOL.md, "Assumptions".
	InForce InputKind = "force"
	// InAdopt (target): this node becomes the holder at Epoch outside a
	// move (a new agent at epoch 1, an import, or after InForce).
	InAdopt InputKind = "adopt"
	// InRelease (target): this node's own Source for the agent committed
	// a move at Epoch; this node no longer holds the agent.
	InRelease InputKind = "release"
)

// Input is one event fed to Step. Fields a kind does not use are empty.
type Input struct {
	Kind InputKind `json:"kind"`
	// Msg is the message that arrived (InMessage).
	Msg *Message `json:"msg,omitempty"`
	// Missing lists the digests of Msg.Blobs that are absent from the
	// target's CAS store (InMessage with MsgHave or MsgOffer; a read).
	Missing []digest.Digest `json:"missing,omitempty"`
	// Journal is the journal position the target already has for the
	// agent (InMessage with MsgHave or MsgOffer).
	Journal JournalPos `json:"journal,omitempty"`
	// Inventory is the agent's inventory (InStart, InInventory, InFrozen).
	Inventory *Inventory `json:"inventory,omitempty"`
	// OK and Problems report an action's result.
	OK       bool     `json:"ok,omitempty"`
	Problems []string `json:"problems,omitempty"`
	// Operator names who forced (InForce).
	Operator string `json:"operator,omitempty"`
	// Epoch is the epoch for InAdopt and InRelease.
	Epoch uint64 `json:"epoch,omitempty"`
	// Move names the move for InRelease.
	Move string `json:"move,omitempty"`
}

// Receive returns the Input for an arriving message.
func Receive(m Message) Input { return Input{Kind: InMessage, Msg: &m} }
