package api

import (
	"context"
	"net/http"
)

// Approvals and effects (`capsule agent approve`, `deny`, `effect`;
// docs/PROTOCOL.md, "Approvals and effects"). A refused decision is an
// *Error with Code "conflict" (or "not_found") and Reason one of the
// agent package's refusal codes: unknown_call, already_decided,
// arguments_changed, tool_changed, spec_changed, duplicate_call, consumed.

// WatchWaiting is the state watchers see while the agent waits for a
// decision on an approval request (AgentStatus.Activity "waiting").
const WatchWaiting = "waiting"

// Decisions an ApproveRequest may carry and outcomes of an EffectRequest.
const (
	DecisionApproved = "approved"
	DecisionDenied   = "denied"
	OutcomeDone      = "done"
	OutcomeFailed    = "failed"
)

// ApproveRequest decides on the approval request of one call.
type ApproveRequest struct {
	CallID   string `json:"call_id"`
	Decision string `json:"decision"` // DecisionApproved or DecisionDenied
	By       string `json:"by"`       // who decides
	Reason   string `json:"reason,omitempty"`
	// ArgumentsDigest, when set, is the digest of the arguments the person
	// deciding saw (agent status shows it); a request that names other
	// arguments is refused (arguments_changed).
	ArgumentsDigest string `json:"arguments_digest,omitempty"`
}

// EffectRequest records what an external call whose outcome was unknown did.
type EffectRequest struct {
	CallID  string `json:"call_id"`
	Outcome string `json:"outcome"` // OutcomeDone or OutcomeFailed
	By      string `json:"by"`
	Note    string `json:"note,omitempty"`
}

// WaitingApproval is a call the agent waits on (AgentStatus.Waiting).
type WaitingApproval struct {
	CallID          string `json:"call_id"`
	Tool            string `json:"tool"`
	ArgumentsDigest string `json:"arguments_digest"`
	Request         string `json:"request"` // the approval_request event's ID
	Rule            string `json:"rule,omitempty"`
}

// UnresolvedEffect is an external call whose outcome is unknown until an
// operator records it (AgentStatus.Unresolved).
type UnresolvedEffect struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Result string `json:"result"` // the interrupted tool_result event's ID
}

// Approver is the part of the local API that records approvals and
// effect outcomes; a LocalService that implements it serves its routes.
type Approver interface {
	// Approve journals a decision on the approval request of req.CallID
	// and wakes the agent; it is refused with a reason code.
	Approve(ctx context.Context, id string, req ApproveRequest) (EventRef, error)
	// RecordEffect journals an effect_outcome for an unresolved effect.
	RecordEffect(ctx context.Context, id string, req EffectRequest) (EventRef, error)
}

func approveRoutes(mux *http.ServeMux, svc LocalService) {
	ap, ok := svc.(Approver)
	if !ok {
		return
	}
	mux.HandleFunc("POST "+PathAgents+"/{id}/approval", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		var req ApproveRequest
		replyDecoded(w, r, &req, func() (any, error) { return ap.Approve(r.Context(), id, req) })
	}))
	mux.HandleFunc("POST "+PathAgents+"/{id}/effect", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		var req EffectRequest
		replyDecoded(w, r, &req, func() (any, error) { return ap.RecordEffect(r.Context(), id, req) })
	}))
}

var _ Approver = (*LocalClient)(nil)

// Approve implements Approver.
func (c *LocalClient) Approve(ctx context.Context, id string, req ApproveRequest) (EventRef, error) {
	var v EventRef
	return v, c.do(ctx, http.MethodPost, agentPath(id, "/approval"), req, &v)
}

// RecordEffect implements Approver.
func (c *LocalClient) RecordEffect(ctx context.Context, id string, req EffectRequest) (EventRef, error) {
	var v EventRef
	return v, c.do(ctx, http.MethodPost, agentPath(id, "/effect"), req, &v)
}
