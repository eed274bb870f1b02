package node

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// Talking to an agent: `capsule agent say` and `capsule agent model`
// journal one event under the holder epoch while this node holds the
// agent, then wake the runner so that an idle agent takes it up now.

// Say implements api.LocalService: it journals req.Text as a user message.
func (n *Node) Say(ctx context.Context, id string, req api.SayRequest) (api.EventRef, error) {
	if err := api.CheckSayText(req.Text); err != nil {
		return api.EventRef{}, err
	}
	return n.appendTalk(id, journal.KindUser, journal.UserMessage{Text: req.Text}, nil)
}

// SetModel implements api.LocalService: it journals a model_change after
// checking that the model maps to a wire format this release renders,
// and keeps req.BaseURL in the agent's node-local record (an empty one
// clears it: another model is another server).
func (n *Node) SetModel(ctx context.Context, id string, req api.ModelRequest) (api.EventRef, error) {
	mc, err := modelChange(req)
	if err != nil {
		return api.EventRef{}, err
	}
	if err := checkBaseURL(req.BaseURL); err != nil {
		return api.EventRef{}, err
	}
	return n.appendTalk(id, journal.KindModelChange, mc, func(a *tenant) error {
		if a.meta.BaseURL == req.BaseURL {
			return nil
		}
		a.meta.BaseURL = req.BaseURL
		return a.saveMeta()
	})
}

// modelChange checks req and returns the event body it journals. The API
// is the journal's spelling (chat, responses, messages, generateContent)
// or a wire format's name; empty takes the provider's default.
func modelChange(req api.ModelRequest) (journal.ModelChange, error) {
	mc := journal.ModelChange{Provider: strings.TrimSpace(req.Provider), API: strings.TrimSpace(req.API), Model: strings.TrimSpace(req.Model)}
	if mc.Provider == "" {
		return mc, fmt.Errorf("%w: set model: no provider", api.ErrInvalid)
	}
	if mc.API == "" {
		if mc.API = api.DefaultAPI(mc.Provider); mc.API == "" {
			return mc, fmt.Errorf("%w: set model: provider %q has no default API: name one (chat for an OpenAI-compatible server)", api.ErrInvalid, mc.Provider)
		}
	}
	if !api.KnownModelAPI(mc.API) {
		return mc, fmt.Errorf("%w: set model: unknown API %q (want one of %s)", api.ErrInvalid, mc.API, strings.Join(api.ModelAPIs, ", "))
	}
	if err := agent.TargetOf(mc).Validate(); err != nil {
		return mc, fmt.Errorf("%w: set model: %v", api.ErrInvalid, err)
	}
	return mc, nil
}

// checkBaseURL accepts an empty base URL or an absolute http(s) URL.
func checkBaseURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: set model: base URL %q is not an http:// or https:// URL", api.ErrInvalid, s)
	}
	return nil
}

// appendTalk journals one event for agent id while this node holds it,
// after prepare (if any) ran under the agent's lock, and wakes the runner.
func (n *Node) appendTalk(id string, kind journal.Kind, body any, prepare func(*tenant) error) (api.EventRef, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return api.EventRef{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	epoch, err := a.talkEpoch()
	if err != nil {
		return api.EventRef{}, err
	}
	if prepare != nil {
		if err := prepare(a); err != nil {
			return api.EventRef{}, fmt.Errorf("%s %s: %w", kind, id, err)
		}
	}
	e, err := a.log.Append(kind, epoch, n.wallTime(), body)
	if err != nil {
		return api.EventRef{}, fmt.Errorf("%s %s: %w", kind, id, err)
	}
	a.wake()
	if n.hooks.woken != nil {
		n.hooks.woken(id)
	}
	return api.RefOf(e), nil
}

// talkEpoch returns the holder epoch to journal under, with the journal
// open, or says why this node may not write the agent's journal: it moved
// (naming its holder), a move keeps it frozen, or it is blocked. Caller
// holds a.mu.
func (a *tenant) talkEpoch() (uint64, error) {
	epoch, ok := a.mayRun()
	if !ok {
		return 0, fmt.Errorf("%w: %w: %s", api.ErrConflict, ErrNotHeld, a.notHeldReason())
	}
	if a.log == nil {
		if err := a.openLog(epoch); err != nil {
			return 0, fmt.Errorf("%w: %w: agent %s: journal: %v", api.ErrConflict, ErrNotHeld, a.id, err)
		}
	}
	return epoch, nil
}

// notHeldReason says why talking to the agent goes elsewhere or waits.
// Caller holds a.mu.
func (a *tenant) notHeldReason() string {
	st := a.status()
	switch {
	case st.Successor != "":
		return fmt.Sprintf("agent %s moved to node %s: talk to it there", a.id, st.Successor)
	case !a.hosted():
		return fmt.Sprintf("agent %s is not held by this node (%s)", a.id, st.State)
	}
	return fmt.Sprintf("agent %s: %s", a.id, a.why())
}
