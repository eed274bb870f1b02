package node

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/agentcapsule/capsule/agent"
	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/tool"
	"github.com/agentcapsule/capsule/vfs"
)

// Effects and approvals on the node: the runner's tools are described to
// package agent (effect class, approval rule, digest), the environment
// spec's digest goes with every step, and status shows the calls waiting
// for approval and the unresolved effects, read from the journal alone.

// describedTools is the agent's Toolbox as the runner offers it: a
// built-in tool is described by the release (tool.Effect) and the spec's
// rule for it (approval never unless the spec says required); any other
// tool by the Toolbox itself when it is agent.Described, else not at all
// (the agent then takes the narrowest values: external, approval
// required).
type describedTools struct {
	agent.Toolbox
	rules map[string]envspec.Rule // the spec's built-in rules
	spec  string                  // agent.SpecDigest of the spec in force
}

// Info implements agent.Described.
func (d *describedTools) Info(name string) (agent.ToolInfo, bool) {
	if inner, ok := d.Toolbox.(agent.Described); ok {
		if info, ok := inner.Info(name); ok {
			return info, true
		}
	}
	effect := tool.Effect(name)
	if effect == "" {
		return agent.ToolInfo{}, false
	}
	for _, t := range d.Tools() {
		if t.Name == name {
			approval := agent.ApprovalNever
			if r, ok := d.rules[name]; ok && r.Approval != "" {
				approval = r.Approval
			}
			return agent.ToolInfo{Name: name, Effect: effect, Approval: approval, Digest: agent.ToolDigest(t)}, true
		}
	}
	return agent.ToolInfo{}, false
}

// digestOf returns the tool digest of name as the runner describes it now.
func (d *describedTools) digestOf(name string) string {
	return agent.Describe(d, name).Digest
}

// describeTools gives the step its described tools and the spec digest,
// reading the spec once per run.
func (a *tenant) describeTools(rl *runLoop, env *agent.Env) error {
	d := rl.described.Load()
	if d == nil { // once per run: the tools and the spec do not change while it runs
		spec, rules, err := a.effectSpec()
		if err != nil {
			return &agent.BlockedError{Reason: "the environment spec cannot be read: " + err.Error(), Err: err}
		}
		d = &describedTools{Toolbox: rl.tools, rules: rules, spec: spec}
		rl.described.Store(d)
	}
	if rl.tools != nil {
		env.Tools = d
	}
	env.SpecDigest = d.spec
	return nil
}

// effectSpec reads the capsule's environment spec: its digest and the
// approval rules of built-in tools.
func (a *tenant) effectSpec() (string, map[string]envspec.Rule, error) {
	b, err := vfs.ReadFile(a.n.fsys, filepath.Join(a.capsule(), filepath.FromSlash(manifest.EnvironmentPath)))
	if err != nil {
		return "", nil, fmt.Errorf("environment: %w", err)
	}
	spec, err := envspec.Parse(b)
	if err != nil {
		return "", nil, fmt.Errorf("environment: %w", err)
	}
	return agent.SpecDigest(b), spec.Builtins, nil
}

// effectView is what status shows of approvals and effects, read from
// the journal file as it grows (guarded by its own lock). It keeps only
// what the lists need: the open turn (from the newest user event), the
// newest model_change, and the unresolved effects so far.
type effectView struct {
	mu         sync.Mutex
	view       journalView
	kept       int            // events of view already looked at
	first      string         // the ID of the first of them
	model      *journal.Event // the newest model_change
	open       map[string]api.UnresolvedEffect
	order      []string // call IDs of open, oldest first
	waiting    []api.WaitingApproval
	unresolved []api.UnresolvedEffect
}

// effects returns the calls waiting for approval and the unresolved
// effects of the agent's journal on this node.
func (a *tenant) effects() ([]api.WaitingApproval, []api.UnresolvedEffect) {
	v := &a.effectsView
	v.mu.Lock()
	defer v.mu.Unlock()
	events, err := v.view.refresh(a.n.fsys, filepath.Join(a.capsule(), journalInCap))
	if err != nil || len(events) == v.kept {
		return v.waiting, v.unresolved
	}
	if v.kept > 0 && (len(events) < v.kept || events[0].ID != v.first) {
		// the file was rewritten (a move in, a discard): read it all again
		v.kept, v.model, v.open, v.order = 0, nil, nil, nil
	}
	v.observe(events[v.kept:])
	turn := events
	if v.model != nil {
		turn = append([]journal.Event{*v.model}, events...)
	}
	v.waiting = nil
	if w, err := agent.WaitingOn(turn); err == nil && w != nil {
		v.waiting = []api.WaitingApproval{{CallID: w.CallID, Tool: w.Tool, ArgumentsDigest: w.ArgumentsDigest, Request: w.Request, Rule: w.Rule}}
	}
	v.trim(events)
	return v.waiting, v.unresolved
}

// observe takes in new events: model changes and unresolved effects.
func (v *effectView) observe(events []journal.Event) {
	if v.open == nil {
		v.open = map[string]api.UnresolvedEffect{}
	}
	for i := range events {
		switch e := &events[i]; e.Kind {
		case journal.KindModelChange:
			m := *e
			v.model = &m
		case journal.KindToolResult, journal.KindEffectOutcome:
			us, err := agent.Unresolved(append(v.pending(), *e))
			if err != nil {
				continue
			}
			v.setOpen(us)
		}
	}
	v.unresolved = nil
	for _, id := range v.order {
		v.unresolved = append(v.unresolved, v.open[id])
	}
}

// pending returns the open unresolved effects as the events agent.Unresolved reads.
func (v *effectView) pending() []journal.Event {
	var out []journal.Event
	for _, id := range v.order {
		u := v.open[id]
		body, _ := json.Marshal(journal.ToolResult{CallID: u.CallID, Name: u.Tool, Interrupted: true, Outcome: journal.OutcomeUnknown})
		out = append(out, journal.Event{ID: u.Result, Kind: journal.KindToolResult, Body: body})
	}
	return out
}

func (v *effectView) setOpen(us []agent.UnresolvedEffect) {
	v.open, v.order = map[string]api.UnresolvedEffect{}, nil
	for _, u := range us {
		v.open[u.CallID] = api.UnresolvedEffect(u)
		v.order = append(v.order, u.CallID)
	}
}

// trim drops the events before the newest user event (Decide never reads
// past it) and the model change it keeps apart.
func (v *effectView) trim(events []journal.Event) {
	from := 0
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == journal.KindUser {
			from = i
			break
		}
	}
	v.view.events = append([]journal.Event(nil), events[from:]...)
	v.kept, v.first = len(v.view.events), ""
	if v.kept > 0 {
		v.first = v.view.events[0].ID
	}
}

// journalEvents reads the agent's whole journal as it is on disk.
func (a *tenant) journalEvents() ([]journal.Event, error) {
	var v journalView
	return v.refresh(a.n.fsys, filepath.Join(a.capsule(), journalInCap))
}

// refusal turns an agent refusal into the API's error with its reason code.
func refusal(err error) error {
	re, ok := err.(*agent.RefusalError)
	if !ok {
		return err
	}
	e := &api.Error{Status: 409, Code: "conflict", Reason: re.Code, Message: re.Error()}
	if re.Code == agent.RefuseUnknownCall {
		e.Status, e.Code = 404, "not_found"
	}
	return e
}

var _ api.Approver = (*Node)(nil)

// Approve implements api.Approver: it checks the decision against the
// journal and what is in force now (agent.CheckDecision; the tool's
// digest when the runner has its tools open, the spec's always), journals
// the approval and wakes the runner.
func (n *Node) Approve(ctx context.Context, id string, req api.ApproveRequest) (api.EventRef, error) {
	if req.CallID == "" || req.By == "" || (req.Decision != api.DecisionApproved && req.Decision != api.DecisionDenied) {
		return api.EventRef{}, fmt.Errorf("%w: approval: want a call id, who decides and a decision (approved or denied)", api.ErrInvalid)
	}
	return n.appendChecked(id, journal.KindApproval, func(a *tenant, events []journal.Event) (any, error) {
		spec, _, err := a.effectSpec()
		if err != nil {
			return nil, err
		}
		now := agent.Binding{Arguments: req.ArgumentsDigest, Spec: spec}
		d, err := agent.CheckDecision(events, req.CallID, now)
		if err == nil && a.run != nil {
			if tools := a.run.described.Load(); tools != nil && tools.Toolbox != nil {
				now.Tool = tools.digestOf(d.Body.Name)
				d, err = agent.CheckDecision(events, req.CallID, now)
			}
		}
		if err != nil {
			return nil, refusal(err)
		}
		return journal.Approval{CallID: req.CallID, Request: d.Request, Decision: req.Decision, By: req.By, Reason: req.Reason}, nil
	})
}

// RecordEffect implements api.Approver: it journals what an operator
// found an unresolved external call did.
func (n *Node) RecordEffect(ctx context.Context, id string, req api.EffectRequest) (api.EventRef, error) {
	if req.CallID == "" || req.By == "" || (req.Outcome != api.OutcomeDone && req.Outcome != api.OutcomeFailed) {
		return api.EventRef{}, fmt.Errorf("%w: effect: want a call id, who records it and an outcome (done or failed)", api.ErrInvalid)
	}
	return n.appendChecked(id, journal.KindEffectOutcome, func(a *tenant, events []journal.Event) (any, error) {
		us, err := agent.Unresolved(events)
		if err != nil {
			return nil, err
		}
		for _, u := range us {
			if u.CallID == req.CallID {
				return journal.EffectOutcome{CallID: req.CallID, Outcome: req.Outcome, By: req.By, Note: req.Note}, nil
			}
		}
		return nil, &api.Error{Status: 404, Code: "not_found", Reason: agent.RefuseUnknownCall,
			Message: fmt.Sprintf("agent %s has no unresolved effect of call %s", id, req.CallID)}
	})
}

// appendChecked journals one event whose body body makes from the
// journal as it is, under the agent's lock while this node holds it, and
// wakes the runner.
func (n *Node) appendChecked(id string, kind journal.Kind, body func(*tenant, []journal.Event) (any, error)) (api.EventRef, error) {
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
	events, err := a.journalEvents()
	if err != nil {
		return api.EventRef{}, fmt.Errorf("%s %s: %w", kind, id, err)
	}
	b, err := body(a, events)
	if err != nil {
		return api.EventRef{}, err
	}
	e, err := a.log.Append(kind, epoch, n.wallTime(), b)
	if err != nil {
		return api.EventRef{}, fmt.Errorf("%s %s: %w", kind, id, err)
	}
	a.wake()
	return api.RefOf(e), nil
}

var _ agent.Described = (*describedTools)(nil)
