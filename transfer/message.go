package transfer

import "github.com/agentcapsule/capsule/digest"

// MsgType names a protocol message. Requests go from the source to the
// target; every request has exactly one reply type besides MsgRefused.
type MsgType string

// The requests (source to target) and their replies (target to source).
// See docs/PROTOCOL.md, "Messages".
const (
	// MsgHave is a pre-copy inventory (Blobs) sent while the agent still
	// runs. It changes no state on the target. Reply: MsgWant.
	MsgHave MsgType = "have"
	// MsgWant answers MsgHave with the digests the target lacks (Want) and
	// the journal position it already has (Have).
	MsgWant MsgType = "want"
	// MsgOffer proposes moving the agent at Epoch (the holder's epoch + 1
	// or more) with the frozen state's full inventory (Blobs, Manifest,
	// Journal). The target persists the promise before replying MsgPromise.
	MsgOffer MsgType = "offer"
	// MsgPromise accepts an offer: the target will refuse any older or
	// equal epoch from now on. Want and Have are as for MsgWant.
	MsgPromise MsgType = "promise"
	// MsgPrepare carries the delta: the node streams the blobs listed in
	// Send and the journal events after JournalFrom up to Journal with
	// this message. The target verifies and prepares, then persists
	// PREPARED before replying MsgPrepared.
	MsgPrepare MsgType = "prepare"
	// MsgPrepared says the target verified and prepared the move and waits
	// for MsgActivate.
	MsgPrepared MsgType = "prepared"
	// MsgActivate commits the move. The source persists ACTIVATE_SENT
	// before sending it: from then on it never resumes on its own.
	MsgActivate MsgType = "activate"
	// MsgActivated says the target holds the agent at Epoch (HOLDER was
	// persisted before the reply).
	MsgActivated MsgType = "activated"
	// MsgResolve asks the outcome of a move whose activate got no answer.
	// It is a fencing write: a prepared-but-inactive target aborts the
	// move and burns its epoch before replying.
	MsgResolve MsgType = "resolve"
	// MsgResolved answers MsgResolve with a Resolution.
	MsgResolved MsgType = "resolved"
	// MsgAbort cancels a move that never reached activate (garbage
	// collection of the target's staging after a rollback). It never
	// touches an active holder.
	MsgAbort MsgType = "abort"
	// MsgAborted acknowledges MsgAbort: the move's staging is gone and
	// its epoch is burned.
	MsgAborted MsgType = "aborted"
	// MsgRefused answers any request the target will not perform, with a
	// Reason and the target's epochs (MaxEpoch, Holder).
	MsgRefused MsgType = "refused"
)

// IsRequest reports whether t is sent by a source (and handled by a Target).
func (t MsgType) IsRequest() bool {
	switch t {
	case MsgHave, MsgOffer, MsgPrepare, MsgActivate, MsgResolve, MsgAbort:
		return true
	}
	return false
}

// Reason says why a target refused a request.
type Reason string

// The refusal reasons.
const (
	// ReasonStale: the request's epoch is not newer than the highest epoch
	// the target has seen (and it is not the target's pending or committed
	// move). A source that gets it for an Offer is a zombie.
	ReasonStale Reason = "stale_epoch"
	// ReasonHolder: the target is the active holder of the agent.
	ReasonHolder Reason = "holder"
	// ReasonBusy: the target is still working on this move (verifying or
	// preparing); retry later. The only retryable reason.
	ReasonBusy Reason = "busy"
	// ReasonAborted: this move was aborted on the target (its epoch burned).
	ReasonAborted Reason = "aborted"
	// ReasonUnknownMove: the target has no pending move with this ID.
	ReasonUnknownMove Reason = "unknown_move"
	// ReasonNotPrepared: an activate arrived for a move that is not prepared.
	ReasonNotPrepared Reason = "not_prepared"
	// ReasonActive: an abort arrived for a move that is already active.
	ReasonActive Reason = "active"
	// ReasonVerify: the staged state failed verification (Problems says
	// what); the target aborted the move.
	ReasonVerify Reason = "verify_failed"
	// ReasonPrepare: preparing failed (Problems says what: a missing
	// secret, an unreadable schema version); the target aborted the move.
	ReasonPrepare Reason = "prepare_failed"
	// ReasonMismatch: the message names another target node, or is malformed.
	ReasonMismatch Reason = "mismatch"
)

// Resolution is a target's answer to MsgResolve.
type Resolution string

// The resolutions.
const (
	// ResolvedCommitted: the target activated this move (it holds or held
	// the agent at the move's epoch). The source retires.
	ResolvedCommitted Resolution = "committed"
	// ResolvedAborted: the move is aborted and its epoch burned on the
	// target, so a late activate will be refused. The source resumes.
	ResolvedAborted Resolution = "aborted"
	// ResolvedUnknown: the target has seen a newer epoch and no longer
	// knows this move, so it cannot say. The source stays frozen (stale)
	// and an operator decides.
	ResolvedUnknown Resolution = "unknown"
)

// Blob names one content-addressed blob and its size in bytes.
type Blob struct {
	Digest digest.Digest `json:"digest"`
	Size   int64         `json:"size"`
}

// JournalPos is a position in the agent's journal: the number of events
// and the ID of the last one (empty for an empty journal).
type JournalPos struct {
	Count uint64 `json:"count"`
	Head  string `json:"head,omitempty"`
}

// Inventory describes the agent's state on the source: every blob it
// needs, the digest of the manifest's bytes and the journal head.
type Inventory struct {
	Blobs    []Blob        `json:"blobs"`
	Manifest digest.Digest `json:"manifest,omitempty"`
	Journal  JournalPos    `json:"journal"`
}

// Bytes returns the total size of the inventory's blobs.
func (inv Inventory) Bytes() int64 { return sumSizes(inv.Blobs) }

// Message is one protocol message. Every message carries the agent ID
// (the same identifier on both sides), the move ID and the move's epoch,
// and the source (From) and target (To) node IDs. Fields a type does not
// use are empty. Messages are plain data: encode them as JSON.
type Message struct {
	Type  MsgType `json:"type"`
	Agent string  `json:"agent"`
	Move  string  `json:"move"`
	Epoch uint64  `json:"epoch,omitempty"`
	From  string  `json:"from"`
	To    string  `json:"to"`
	// Re is the request type a reply answers (replies only), so a late
	// reply to an earlier request is never mistaken for the current one.
	Re MsgType `json:"re,omitempty"`

	// Blobs is the full inventory (MsgHave, MsgOffer, MsgPrepare).
	Blobs []Blob `json:"blobs,omitempty"`
	// Manifest is the digest of the frozen manifest's bytes (MsgOffer, MsgPrepare).
	Manifest digest.Digest `json:"manifest,omitempty"`
	// Journal is the source's frozen journal head (MsgOffer, MsgPrepare).
	Journal JournalPos `json:"journal,omitempty"`

	// Want lists the digests the target lacks (MsgWant, MsgPromise).
	Want []digest.Digest `json:"want,omitempty"`
	// Have is the journal position the target already holds (MsgWant, MsgPromise).
	Have JournalPos `json:"have,omitempty"`

	// Send lists the blobs whose bodies travel with this MsgPrepare; the
	// node streams them (and the journal tail) and stores them in the
	// target's CAS store before the target steps the message.
	Send []Blob `json:"send,omitempty"`
	// JournalFrom is where the journal tail carried by MsgPrepare starts
	// (the events after it, up to Journal, travel with the message).
	JournalFrom JournalPos `json:"journal_from,omitempty"`
	// Stopped carries the operator's intent with MsgPrepare and
	// MsgActivate: the agent is stopped (`agent stop`, `create --stopped`)
	// and stays stopped on the target. The node sets it as it sends, from
	// the intent at that moment; absent (older senders) means running.
	Stopped bool `json:"stopped,omitempty"`

	// Reason says why (MsgRefused).
	Reason Reason `json:"reason,omitempty"`
	// Problems explains a verify or prepare failure (MsgRefused). It never
	// contains secret values.
	Problems []string `json:"problems,omitempty"`
	// MaxEpoch is the highest epoch the target has seen (replies).
	MaxEpoch uint64 `json:"max_epoch,omitempty"`
	// Holder is the epoch at which the target holds the agent, 0 if it
	// does not (replies).
	Holder uint64 `json:"holder,omitempty"`
	// Resolution answers MsgResolve (MsgResolved).
	Resolution Resolution `json:"resolution,omitempty"`
}

func sumSizes(bs []Blob) int64 {
	var n int64
	for _, b := range bs {
		n += b.Size
	}
	return n
}
