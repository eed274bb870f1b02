package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// fakeAgent is the one agent of fakeService.
const fakeAgent = "01JAAAAAAAAAAAAAAAAAAAAAAA"

// fakeService is an in-memory twin of the node's local API: one agent
// whose journal is a list of events; say and set model append to it.
type fakeService struct {
	api.LocalService // unset: a call the web view should not make panics

	mu      sync.Mutex
	events  []journal.Event
	w       *journal.Writer
	waiting []api.WaitingApproval
	calls   []string        // the actions made, "say hello", "approve c1 by alice"
	live    []journal.Event // what a watch sends after its caught-up mark
	memory  string          // the agent's working memory
	refuse  error           // if set, every action is refused with it
	status  api.AgentStatus
}

func newFakeService() *fakeService {
	f := &fakeService{status: api.AgentStatus{ID: fakeAgent, Node: "nself", Holder: "nself", Epoch: 1, State: api.StateRunning}}
	f.w = journal.NewWriter("m1")
	return f
}

// add journals one event of kind with body.
func (f *fakeService) add(kind journal.Kind, body any) journal.Event {
	return f.addAt(kind, 1, "2026-12-01T00:00:00Z", body)
}

// addAt journals one event under epoch at the wall time at.
func (f *fakeService) addAt(kind journal.Kind, epoch uint64, at string, body any) journal.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := f.w.Next(kind, epoch, at, body)
	if err != nil {
		panic(err)
	}
	f.events = append(f.events, e)
	return e
}

func (f *fakeService) record(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return f.refuse
	}
	f.calls = append(f.calls, call)
	return nil
}

func (f *fakeService) made() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeService) Info(context.Context) (api.NodeInfo, error) {
	return api.NodeInfo{ID: "nself", Listen: "127.0.0.1:7070", Release: "test", Agents: 1,
		Readiness: &api.Readiness{Ready: true}}, nil
}

func (f *fakeService) Peers(context.Context) ([]api.Peer, error) {
	return []api.Peer{{ID: "npeeraaaaaaaaaaaaaaaaaaaaaa", Addr: "127.0.0.2:7070"}}, nil
}

func (f *fakeService) Agents(ctx context.Context) ([]api.AgentStatus, error) {
	st, err := f.Agent(ctx, fakeAgent)
	return []api.AgentStatus{st}, err
}

func (f *fakeService) Agent(_ context.Context, id string) (api.AgentStatus, error) {
	if id != fakeAgent {
		return api.AgentStatus{}, fmt.Errorf("%w: agent %s", api.ErrNotFound, id)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.status
	st.Events, st.Waiting = len(f.events), f.waiting
	return st, nil
}

func (f *fakeService) Say(_ context.Context, id string, req api.SayRequest) (api.EventRef, error) {
	if err := f.record("say " + req.Text); err != nil {
		return api.EventRef{}, err
	}
	return api.RefOf(f.add(journal.KindUser, journal.UserMessage{Text: req.Text})), nil
}

func (f *fakeService) SetModel(_ context.Context, id string, req api.ModelRequest) (api.EventRef, error) {
	if err := f.record(fmt.Sprintf("model %s %s %s", req.Provider, req.API, req.Model)); err != nil {
		return api.EventRef{}, err
	}
	return api.RefOf(f.add(journal.KindModelChange, journal.ModelChange{Provider: req.Provider, API: req.API, Model: req.Model})), nil
}

func (f *fakeService) StopAgent(_ context.Context, id string) (api.AgentStatus, error) {
	return api.AgentStatus{}, f.record("stop")
}

func (f *fakeService) StartAgent(_ context.Context, id string) (api.AgentStatus, error) {
	return api.AgentStatus{}, f.record("start")
}

func (f *fakeService) Move(_ context.Context, id string, req api.MoveRequest, _ func(api.MoveProgress)) (api.MoveResult, error) {
	return api.MoveResult{Outcome: api.OutcomeCommitted}, f.record("move " + req.To)
}

func (f *fakeService) Approve(_ context.Context, id string, req api.ApproveRequest) (api.EventRef, error) {
	return api.EventRef{}, f.record(fmt.Sprintf("%s %s by %s digest %s reason %q", req.Decision, req.CallID, req.By, req.ArgumentsDigest, req.Reason))
}

func (f *fakeService) WorkingMemory(_ context.Context, id string) (api.WorkingMemory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return api.WorkingMemory{Agent: id, Bytes: len(f.memory), Limit: 4096, Digest: "sha256:" + strings.Repeat("f", 64), Text: f.memory}, nil
}

func (f *fakeService) Workspace(_ context.Context, id string) (api.Workspace, error) {
	if id != fakeAgent {
		return api.Workspace{}, fmt.Errorf("%w: agent %s", api.ErrNotFound, id)
	}
	return api.Workspace{Agent: id, Digest: "sha256:" + strings.Repeat("1", 64), Entries: []api.WorkspaceEntry{
		{Path: "README", Type: "file", Size: 6, Blob: "sha256:" + strings.Repeat("2", 64)},
		{Path: "link", Type: "symlink", Target: "README"},
		{Path: "src/<run>.sh", Type: "file", Size: 10, Exec: true, Blob: "sha256:" + strings.Repeat("3", 64)},
	}}, nil
}

func (f *fakeService) RecordEffect(context.Context, string, api.EffectRequest) (api.EventRef, error) {
	return api.EventRef{}, f.record("effect")
}

func (f *fakeService) Events(_ context.Context, id string, q api.EventsQuery) (api.EventPage, error) {
	if err := api.CheckEventsQuery(q); err != nil {
		return api.EventPage{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	before := len(f.events)
	if q.Before > 0 && q.Before < before {
		before = q.Before
	}
	start := max(0, before-q.Limit)
	page := api.EventPage{Total: len(f.events), Start: start, Events: []json.RawMessage{}}
	for _, e := range f.events[start:before] {
		page.Events = append(page.Events, journal.Encode(e))
	}
	return page, nil
}

// WatchAgent sends the journal from opts.From (none with opts.Live), the
// caught-up mark, then f.live, then ends: the fake's live events.
func (f *fakeService) WatchAgent(ctx context.Context, id string, opts api.WatchOptions, send func(api.WatchMessage) error) error {
	f.mu.Lock()
	evs := append([]journal.Event(nil), f.events...)
	live := append([]journal.Event(nil), f.live...)
	f.mu.Unlock()
	if opts.Live {
		evs = nil
	}
	for _, e := range evs[min(opts.From, len(evs)):] {
		if err := send(api.WatchMessage{Event: journal.Encode(e)}); err != nil {
			return err
		}
	}
	if err := send(api.WatchMessage{CaughtUp: true}); err != nil {
		return err
	}
	for _, e := range live {
		if err := send(api.WatchMessage{Event: journal.Encode(e)}); err != nil {
			return err
		}
	}
	return nil
}
