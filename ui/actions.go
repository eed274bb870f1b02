package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentcapsule/capsule/api"
)

// The actions of the agent page. Each is a POST (checked by Server.action)
// that makes one call of the local API, the call the CLI's command makes,
// with the CLI's own checks before it; on success the browser is sent back
// to the agent page, on a refusal the page shows the error.

type actionDef struct {
	name string
	do   func(ctx context.Context, id string, r *http.Request) error
}

func (s *Server) actions() []actionDef {
	svc := s.cfg.Service
	return []actionDef{
		{"say", func(ctx context.Context, id string, r *http.Request) error {
			text := r.PostFormValue("text")
			if err := api.CheckSayText(text); err != nil { // as `capsule agent say` checks
				return err
			}
			_, err := svc.Say(ctx, id, api.SayRequest{Text: text})
			return err
		}},
		{"model", s.setModel},
		{"approve", s.decide(api.DecisionApproved)},
		{"deny", s.decide(api.DecisionDenied)},
		{"stop", func(ctx context.Context, id string, r *http.Request) error {
			_, err := svc.StopAgent(ctx, id)
			return err
		}},
		{"start", func(ctx context.Context, id string, r *http.Request) error {
			_, err := svc.StartAgent(ctx, id)
			return err
		}},
		{"move", s.move},
	}
}

// do runs an action and answers the browser.
func (s *Server) do(a actionDef) func(http.ResponseWriter, *http.Request, session) {
	return func(w http.ResponseWriter, r *http.Request, x session) {
		id := r.PathValue("id")
		if err := a.do(r.Context(), id, r); err != nil {
			s.agentPage(w, r, x, statusOf(err), a.name+": "+err.Error())
			return
		}
		http.Redirect(w, r, "/agents/"+id, http.StatusSeeOther)
	}
}

// setModel switches the model as `capsule agent model` does: the form's
// choice names the provider and API, the model is required, and an empty
// base URL clears the one the node kept.
func (s *Server) setModel(ctx context.Context, id string, r *http.Request) error {
	provider, apiName, _ := strings.Cut(r.PostFormValue("choice"), "/")
	req := api.ModelRequest{Provider: provider, API: apiName, Model: strings.TrimSpace(r.PostFormValue("model")),
		BaseURL: strings.TrimSpace(r.PostFormValue("base_url"))}
	if req.Provider == "" || req.Model == "" {
		return fmt.Errorf("%w: a provider and a model are required", api.ErrInvalid)
	}
	_, err := s.cfg.Service.SetModel(ctx, id, req)
	return err
}

// decide records an approval or a denial of the form's call, bound to
// the arguments digest the page showed; a denial needs a reason, as
// `capsule agent deny` does.
func (s *Server) decide(decision string) func(context.Context, string, *http.Request) error {
	return func(ctx context.Context, id string, r *http.Request) error {
		reason := strings.TrimSpace(r.PostFormValue("reason"))
		if decision == api.DecisionDenied && reason == "" {
			return fmt.Errorf("%w: deny: a reason is required: the model is told why", api.ErrInvalid)
		}
		by := strings.TrimSpace(r.PostFormValue("by"))
		if by == "" {
			by = s.cfg.Operator
		}
		_, err := s.cfg.Service.Approve(ctx, id, api.ApproveRequest{CallID: r.PostFormValue("call"), Decision: decision,
			By: by, Reason: reason, ArgumentsDigest: r.PostFormValue("digest")})
		return err
	}
}

// move moves the agent to the form's peer and waits for the outcome, as
// `capsule move` does: a move that did not commit is an error that names
// its outcome.
func (s *Server) move(ctx context.Context, id string, r *http.Request) error {
	to := r.PostFormValue("to")
	if err := api.CheckID(api.NodeID, to); err != nil {
		return err
	}
	res, err := s.cfg.Service.Move(ctx, id, api.MoveRequest{To: to}, nil)
	if err != nil {
		return err
	}
	if res.Outcome != api.OutcomeCommitted {
		return fmt.Errorf("%w: move %s: %s: %s", api.ErrConflict, res.MoveID, res.Outcome, res.Reason)
	}
	return nil
}
