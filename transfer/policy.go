package transfer

import (
	"errors"
	"fmt"
)

// Errors returned by the constructors and helpers of this package. The
// machines themselves never return errors: failures are inputs and outcomes.
var (
	// ErrConfig reports an invalid SourceConfig.
	ErrConfig = errors.New("transfer: invalid config")
	// ErrNoRecord reports that Recover found no record of the machine's kind.
	ErrNoRecord = errors.New("transfer: no record")
	// ErrNotHolder reports a move started by a node that does not hold the agent.
	ErrNotHolder = errors.New("transfer: not the holder")
	// ErrMoveInProgress reports a second move of an agent while one is unresolved.
	ErrMoveInProgress = errors.New("transfer: move in progress")
)

// DefaultAbortRetries is the number of failed MsgAbort attempts after which
// a rolled-back Source stops cleaning up, when SourceConfig.AbortRetries is 0.
const DefaultAbortRetries = 20

// DefaultRetries is the number of attempts a Source makes for one request
// before the point of no return, when SourceConfig.Retries is 0.
const DefaultRetries = 4

// Policy decides how long pre-copy goes on while the agent still runs.
// It is a pure function of the round number and what the last round wanted.
type Policy struct {
	// MaxRounds is the number of pre-copy rounds (have/want + push) before
	// freezing. 0 disables pre-copy: the whole delta moves while frozen.
	MaxRounds int `json:"max_rounds"`
	// SmallBytes ends pre-copy once a round wanted at most this many bytes:
	// the rest is cheap enough to send inside the frozen window.
	SmallBytes int64 `json:"small_bytes"`
}

// DefaultPolicy pre-copies for up to 4 rounds, until a round wants at most 1 MiB.
var DefaultPolicy = Policy{MaxRounds: 4, SmallBytes: 1 << 20}

// Continue reports whether another pre-copy round should follow round
// (1-based) after it wanted wantBytes.
func (p Policy) Continue(round int, wantBytes int64) bool {
	return round < p.MaxRounds && wantBytes > p.SmallBytes
}

// SourceConfig describes one move attempt.
type SourceConfig struct {
	// Agent is the agent ID: the same identifier on both nodes.
	Agent string
	// Move is a fresh unique ID for this attempt (a ULID, chosen by the node).
	Move string
	// Self is this (source) node's ID; Peer is the target node's ID.
	Self, Peer string
	// Holder is the epoch at which this node holds the agent now.
	Holder uint64
	// Epoch is the epoch to offer. It must exceed Holder and every epoch
	// this node offered before for the agent: use NextEpoch.
	Epoch uint64
	// Policy drives pre-copy.
	Policy Policy
	// Retries is the number of attempts per request before the point of
	// no return; 0 means DefaultRetries.
	Retries int
	// AbortRetries bounds the failed attempts at MsgAbort after a rollback
	// (garbage collection of the target's staging; the agent already runs
	// again). 0 means DefaultAbortRetries; a negative value means forever.
	// Until the abort is answered or given up, CheckStart refuses a new
	// move; after giving up, the target's staging stays until a newer
	// offer supersedes it.
	AbortRetries int
}

func (c SourceConfig) withDefaults() SourceConfig {
	if c.Retries <= 0 {
		c.Retries = DefaultRetries
	}
	if c.AbortRetries == 0 {
		c.AbortRetries = DefaultAbortRetries
	}
	return c
}

func (c SourceConfig) validate() error {
	switch {
	case c.Agent == "" || c.Move == "" || c.Self == "" || c.Peer == "":
		return fmt.Errorf("%w: agent, move, self and peer are required", ErrConfig)
	case c.Self == c.Peer:
		return fmt.Errorf("%w: source and target are the same node %q", ErrConfig, c.Self)
	case c.Holder == 0:
		return fmt.Errorf("%w: holder epoch is 0", ErrConfig)
	case c.Epoch <= c.Holder:
		return fmt.Errorf("%w: offered epoch %d is not above holder epoch %d", ErrConfig, c.Epoch, c.Holder)
	}
	return nil
}

// NextEpoch returns the epoch a new move must offer: one more than the
// largest of epochs. Pass the local Target's MaxEpoch and the Epoch of the
// last SourceState this node persisted for the agent.
func NextEpoch(epochs ...uint64) uint64 {
	var m uint64
	for _, e := range epochs {
		m = max(m, e)
	}
	return m + 1
}

// CheckStart reports whether this node may start a move of the agent: it
// must hold it (t.Holder() > 0) and its last Source, if any, must be done
// and not keep the agent frozen. One move at a time per agent.
func CheckStart(t *Target, last *Source) error {
	if t == nil || t.Holder() == 0 {
		return ErrNotHolder
	}
	if last != nil && last.st.Holder >= t.Holder() && (!last.Done() || last.Frozen()) {
		return fmt.Errorf("%w: move %s is %s", ErrMoveInProgress, last.st.Move, last.Phase())
	}
	return nil
}

// MayRun reports whether this node may run the agent, and at which epoch:
// only while its Target holds the agent and no Source of this node keeps
// it frozen (a move between freeze and its resolution, or a stale one).
// last is the node's newest Source for the agent, or nil.
func MayRun(t *Target, last *Source) (uint64, bool) {
	if t == nil || t.Holder() == 0 {
		return 0, false
	}
	if last != nil && last.st.Holder >= t.Holder() && last.Frozen() {
		return 0, false
	}
	return t.Holder(), true
}
