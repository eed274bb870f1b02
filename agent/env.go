package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/wire"
)

// ToolOutput is what a tool returned: Content is what the model gets (cut
// to the tool's cap, with a note saying so), Full the whole output when
// Content was cut (stored as a blob attachment of the result).
type ToolOutput struct {
	Content   string
	IsError   bool
	Full      []byte
	MediaType string
}

// Toolbox is the set of tools offered to the model.
type Toolbox interface {
	// Tools returns the declarations offered with every request, in order.
	Tools() []render.Tool
	// Run runs one call; it reports problems (an unknown tool, arguments
	// that do not fit the schema) as an error output the model reads.
	Run(ctx context.Context, name string, args json.RawMessage) ToolOutput
}

// Phase is what a step is doing, for the node's freeze: a model call may
// be cancelled (its output is not journaled yet, so it is made again
// later); a tool is never cut.
type Phase int

// The phases of a step.
const (
	PhaseNone  Phase = iota // between steps
	PhaseModel              // a provider call is in flight
	PhaseTool               // a tool runs
)

// Env is what one step may use. The node builds it for each step.
type Env struct {
	// Events is the journal in total order (clock, machine, seq).
	Events []journal.Event
	// Append journals the events of one step in one durable write, under
	// the step's holder epoch.
	Append func(kinds []journal.Kind, bodies []any) error
	// Tools are the tools offered to the model.
	Tools Toolbox
	// Client returns the client that speaks api.
	Client func(api render.API) (provider.Client, error)
	// BaseURL returns where provider's api is served on this host ("" for
	// the client's default).
	BaseURL func(providerName string, api render.API) string
	// Secret resolves a secret by name at the moment of use; ok is false
	// when the host has no value for it.
	Secret func(name string) (value string, ok bool)
	// Scrub replaces every resolved secret value in s with "[secret NAME]".
	// Nil means no secret was resolved.
	Scrub func(s string) string
	// PutBlob stores data in the capsule's blob store and returns the
	// attachment that names it.
	PutBlob func(name, mediaType string, data []byte) (journal.Attachment, error)
	// OnText shows watchers text the model is generating in step.
	OnText func(step, delta string)
	// Enter tells the node which phase the step is in. Entering PhaseTool
	// with a call ID must be durable before it returns (the node records
	// that the tool runs, so that a crash is seen as an interruption);
	// entering PhaseNone after a tool clears that record. A step calls
	// Enter(PhaseNone) after every PhaseModel, before it journals: the node
	// may let other work (a pre-copy's commit) through while the model
	// thinks, since nothing changes then.
	Enter func(p Phase, callID string) error
	// Interrupted is the call ID the node was running a tool for when it
	// last stopped without finishing it ("" if none).
	Interrupted string
	// Render renders the journal for a model step (nil: wire.Render). It
	// must return what wire.Render returns for the same arguments; the node
	// passes a wire.Incremental kept for the run, which does.
	Render func(events []journal.Event, t render.Target) ([]byte, *render.Report, error)
	// CallTimeout bounds one model call, retries included (0: no bound
	// but the step's context).
	CallTimeout time.Duration
	// SpecDigest is the digest of the environment spec in force (SpecDigest
	// of environment/spec.json as the capsule holds it): an approval binds
	// to it.
	SpecDigest string
	// MaxTurnSteps bounds the model steps between two user events (0:
	// DefaultMaxTurnSteps); the agent blocks when a turn reaches it.
	MaxTurnSteps int
	// WorkingMemory is the agent's working memory as the capsule holds it
	// (memory/working_memory.md). Every model request carries it, pinned
	// after the instructions (render.Target.WorkingMemory, FORMAT §6.4);
	// it is an input of the render, never a journal event: the file is
	// the state.
	WorkingMemory string
}

// renderer returns env.Render, or wire.Render when it is nil.
func (env *Env) renderer() func([]journal.Event, render.Target) ([]byte, *render.Report, error) {
	if env.Render != nil {
		return env.Render
	}
	return wire.Render
}

// DefaultMaxTurnSteps is the bound on model steps in one user turn.
const DefaultMaxTurnSteps = 64

// ErrIdle is returned by Step when there is nothing to do until a user
// event or a model change arrives.
var ErrIdle = errors.New("agent: idle")

// BlockedError is returned by Step when the agent cannot go on without an
// operator: the provider refused the request itself, the journal names a
// model no client serves, a key is missing. Retrying the same step cannot
// help; a new user event, model change or start tries again.
type BlockedError struct {
	Reason string
	Err    error
}

// Error says why the agent is blocked.
func (e *BlockedError) Error() string { return "agent: blocked: " + e.Reason }

// Unwrap returns the cause.
func (e *BlockedError) Unwrap() error { return e.Err }

func blocked(err error, format string, args ...any) error {
	return &BlockedError{Reason: fmt.Sprintf(format, args...), Err: err}
}

// ErrWaiting marks a step that parked the agent until a decision on an
// approval request: the agent takes no step, costs no CPU, and may be
// frozen, moved and restarted meanwhile; the wait comes back from the
// journal alone.
var ErrWaiting = errors.New("agent: waiting for approval")

// WaitingError is returned by Step while call CallID of tool Name waits
// for a decision on its approval request (Request, the event's ID, when
// it was journaled before this step).
type WaitingError struct {
	CallID, Name, Request string
}

// Error names the call.
func (e *WaitingError) Error() string {
	return fmt.Sprintf("%v: call %s (%s)", ErrWaiting, e.CallID, e.Name)
}

// Unwrap returns ErrWaiting.
func (e *WaitingError) Unwrap() error { return ErrWaiting }
