package transfer

// RecordKind names the durable change a Record makes. The kinds are the
// durable writes of docs/PROTOCOL.md, "Durable writes".
type RecordKind string

// Source-side record kinds (one Source per move attempt).
const (
	// RecMigrating: the source decided to move and is about to freeze the
	// agent; it is written before the freeze and before any Offer.
	RecMigrating RecordKind = "MIGRATING"
	// RecActivateSent: the point of no return, written before MsgActivate
	// is sent. A source recovered from it resolves, never resumes.
	RecActivateSent RecordKind = "ACTIVATE_SENT"
	// RecRetired: the move committed; the source no longer holds the agent.
	RecRetired RecordKind = "RETIRED"
	// RecRolledBack: the move failed before the point of no return (or
	// Resolve said aborted); the source resumes at its old epoch. The
	// offered epoch stays burned: a later attempt offers a higher one.
	RecRolledBack RecordKind = "ROLLED_BACK"
	// RecStale: the target holds or has seen a newer epoch; this source is
	// a zombie and stays frozen until an operator decides.
	RecStale RecordKind = "STALE"
	// RecForced: an operator forced the source to resume at a new epoch
	// (`capsule move resolve --force`), burning the move's epoch.
	RecForced RecordKind = "FORCED"
)

// Target-side record kinds (one Target per agent per node).
const (
	// RecPromised: the target accepted an offer; written before MsgPromise.
	RecPromised RecordKind = "PROMISED"
	// RecPrepared: the move is verified and prepared; written before MsgPrepared.
	RecPrepared RecordKind = "PREPARED"
	// RecHolder: the target holds the agent at the move's epoch; written
	// before the agent starts and before MsgActivated.
	RecHolder RecordKind = "HOLDER"
	// RecAborted: the pending move was aborted and its epoch burned;
	// written before MsgAborted, MsgResolved{aborted} or a verify/prepare
	// refusal, and before the staging is discarded.
	RecAborted RecordKind = "ABORTED"
	// RecBurned: an epoch was burned without a pending move (a Resolve or
	// Abort for an epoch the target never promised).
	RecBurned RecordKind = "BURNED"
	// RecAdopted: this node became the holder outside a move (a new agent,
	// or an operator force) — see InAdopt.
	RecAdopted RecordKind = "ADOPTED"
	// RecReleased: this node's own source committed a move; it no longer
	// holds the agent — see InRelease.
	RecReleased RecordKind = "RELEASED"
)

// Record is one durable write. It carries the full durable state of the
// machine that produced it after the change (exactly one of Source and
// Target is set), so a node may either append every record to a log or
// keep only the newest record of each machine: Recover needs only the last.
//
// A node MUST make a Record durable (fsync of the file and its directory)
// before it sends any Message or performs any Action of the same Ready.
type Record struct {
	Kind   RecordKind   `json:"kind"`
	Agent  string       `json:"agent"`
	Source *SourceState `json:"source,omitempty"`
	Target *TargetState `json:"target,omitempty"`
}

// SourceState is the durable state of one move attempt on the source node.
type SourceState struct {
	Agent string `json:"agent"`
	Move  string `json:"move"`
	// Self is the source node's ID, Peer the target node's ID.
	Self string `json:"self"`
	Peer string `json:"peer"`
	// Holder is the epoch the source held the agent at before the move.
	Holder uint64 `json:"holder"`
	// Epoch is the offered epoch (> Holder). It is burned whatever the
	// outcome: a later attempt must offer more (see NextEpoch).
	Epoch uint64 `json:"epoch"`
	// Phase is the last durable phase, equal to the record's Kind.
	Phase RecordKind `json:"phase"`
	// Resumed is the epoch the agent resumed at after a rollback (Holder)
	// or a force (a new epoch above Epoch); 0 otherwise.
	Resumed uint64 `json:"resumed,omitempty"`
	// Operator names who forced the resolution (RecForced).
	Operator string `json:"operator,omitempty"`
	// Note is a human-readable reason for a rollback or a stale verdict.
	Note string `json:"note,omitempty"`
	// Seen is the highest epoch a reply of the peer reported (its MaxEpoch
	// or holder epoch, from refusals and resolutions). A forced resolve
	// resumes above it, also after a restart (docs/PROTOCOL.md §9.2).
	Seen uint64 `json:"seen,omitempty"`
}

// TargetPhase is the phase of a Target's pending incoming move.
type TargetPhase string

// The phases of a pending incoming move.
const (
	PhasePromised TargetPhase = "promised"
	PhasePrepared TargetPhase = "prepared"
)

// Pending is the one incoming move a Target is working on.
type Pending struct {
	Move   string      `json:"move"`
	Epoch  uint64      `json:"epoch"`
	Source string      `json:"source"`
	Phase  TargetPhase `json:"phase"`
}

// MoveRef remembers how an incoming move ended, so duplicates and late
// Resolve requests get the recorded answer.
type MoveRef struct {
	Move   string     `json:"move"`
	Epoch  uint64     `json:"epoch"`
	Result Resolution `json:"result"`
}

// historyLen bounds TargetState.History.
const historyLen = 16

// TargetState is the durable state of one agent on one node, as seen by
// its Target machine.
type TargetState struct {
	Agent string `json:"agent"`
	Self  string `json:"self"`
	// MaxEpoch is the highest epoch this node has promised, burned or held
	// for the agent. It never decreases.
	MaxEpoch uint64 `json:"max_epoch"`
	// Holder is the epoch at which this node holds the agent, 0 if it
	// does not. A node runs the agent only while Holder > 0 (and no Source
	// of this node keeps it frozen).
	Holder uint64 `json:"holder,omitempty"`
	// Pending is the incoming move in progress, if any.
	Pending *Pending `json:"pending,omitempty"`
	// History lists the last incoming moves that ended, newest last.
	History []MoveRef `json:"history,omitempty"`
}
