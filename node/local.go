package node

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/oklog/ulid/v2"
)

// Info implements api.LocalService.
// Its Agents counts the agents this node hosts (holds), not retired copies
// or caches of incoming moves.
func (n *Node) Info(ctx context.Context) (api.NodeInfo, error) {
	n.mu.Lock()
	agents := n.sortedTenants()
	n.mu.Unlock()
	hosted := 0
	for _, a := range agents {
		a.mu.Lock()
		if a.hosted() {
			hosted++
		}
		a.mu.Unlock()
	}
	return api.NodeInfo{ID: string(n.id), Listen: n.addr, Release: schema.Release, Agents: hosted, Readiness: n.readiness.Load()}, nil
}

// Peers implements api.LocalService.
func (n *Node) Peers(ctx context.Context) ([]api.Peer, error) {
	var out []api.Peer
	for _, p := range n.peers.List() {
		out = append(out, api.Peer{ID: string(p.ID), Addr: p.Addr})
	}
	return out, nil
}

// AddPeer implements api.LocalService.
func (n *Node) AddPeer(ctx context.Context, p api.Peer) error {
	if ID(p.ID) == n.id {
		return fmt.Errorf("%w: %s is this node", api.ErrInvalid, p.ID)
	}
	if err := n.peers.Add(Peer{ID: ID(p.ID), Addr: p.Addr}); err != nil {
		return fmt.Errorf("%w: %v", api.ErrInvalid, err)
	}
	n.log.Info("peer added", "peer", p.ID, "addr", p.Addr)
	return nil
}

// RemovePeer implements api.LocalService.
func (n *Node) RemovePeer(ctx context.Context, id string) error {
	if err := n.peers.Remove(ID(id)); err != nil {
		if errors.Is(err, ErrUnknownPeer) {
			return fmt.Errorf("%w: %v", api.ErrNotFound, err)
		}
		return err
	}
	return nil
}

// Agents implements api.LocalService.
func (n *Node) Agents(ctx context.Context) ([]api.AgentStatus, error) {
	n.mu.Lock()
	agents := n.sortedTenants()
	n.mu.Unlock()
	out := []api.AgentStatus{}
	for _, a := range agents {
		a.mu.Lock()
		if a.listed() {
			out = append(out, a.status())
		}
		a.mu.Unlock()
	}
	return out, nil
}

// Agent implements api.LocalService.
func (n *Node) Agent(ctx context.Context, id string) (api.AgentStatus, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return api.AgentStatus{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.removed() {
		return api.AgentStatus{}, fmt.Errorf("%w: agent %s was removed", api.ErrNotFound, id)
	}
	if !a.listed() {
		return api.AgentStatus{}, fmt.Errorf("%w: agent %s: this node never held it and no move of it into this node is here", api.ErrNotFound, id)
	}
	return a.status(), nil
}

// CreateAgent implements api.LocalService: a new capsule with a new agent
// ID (a ULID), optionally recording the workspace folder req.From, held by
// this node at epoch 1.
func (n *Node) CreateAgent(ctx context.Context, req api.CreateAgentRequest) (api.AgentStatus, error) {
	uid, err := ulid.New(ulid.Timestamp(n.clock.Now()), rand.Reader)
	if err != nil {
		return api.AgentStatus{}, err
	}
	id := uid.String()
	a := n.newTenant(id)
	a.holder = transfer.NewTarget(id, string(n.id))
	a.meta = record.Meta{Name: req.Name, Run: !req.Stopped}
	a.mu.Lock()
	defer a.mu.Unlock()
	if req.Model != nil {
		m, err := checkModel(*req.Model)
		if err != nil {
			return api.AgentStatus{}, fmt.Errorf("create agent: %w", err)
		}
		req.Model = &m
	}
	if req.Task != "" && req.Model == nil {
		return api.AgentStatus{}, fmt.Errorf("%w: create agent: a task needs a model (--provider and --model)", api.ErrInvalid)
	}
	if err := checkUserText(req.Task); err != nil {
		return api.AgentStatus{}, fmt.Errorf("%w: create agent: task: %w", api.ErrInvalid, err)
	}
	var spec *envspec.Spec
	if len(req.Spec) > 0 {
		if spec, err = envspec.Parse(req.Spec); err != nil {
			return api.AgentStatus{}, fmt.Errorf("%w: create agent: spec: %w", api.ErrInvalid, err)
		}
	}
	if err := a.create(req.From, req.Model, req.Task, spec); err != nil {
		return api.AgentStatus{}, fmt.Errorf("create agent: %w", err)
	}
	n.mu.Lock()
	n.tenants[id] = a
	n.mu.Unlock()
	if a.meta.Run {
		if err := a.startLocked(journal.KindResumed, journal.Resumed{Reason: "created"}); err != nil {
			return api.AgentStatus{}, err
		}
	}
	n.log.Info("agent created", "agent", id, "name", req.Name)
	return a.status(), nil
}

// create lays out the new agent: capsule, workspace, then the holder
// record at epoch 1 (the last durable step: a node runs nothing without it).
func (a *tenant) create(from string, model *api.ModelRef, task string, spec *envspec.Spec) error {
	fsys := a.n.fsys
	if err := vfs.MkdirAllDurable(fsys, a.dir, 0o700); err != nil {
		return err
	}
	if err := initCapsule(fsys, a.capsule(), a.id, a.meta.Name, a.n.capsuleConfig()); err != nil {
		return err
	}
	if spec != nil {
		c, err := capsule.Open(fsys, a.capsule(), a.n.capsuleConfig())
		if err != nil {
			return err
		}
		if err := c.Commit(func(tx *capsule.Tx) error { return tx.SetEnvironment(spec) }); err != nil {
			return fmt.Errorf("environment: %w", err)
		}
	}
	if err := vfs.MkdirAllDurable(fsys, a.work(), 0o755); err != nil {
		return err
	}
	if from != "" {
		if err := copyTree(vfs.OS{}, from, fsys, a.work()); err != nil {
			return fmt.Errorf("workspace %s: %w", from, err)
		}
	}
	if err := a.saveMeta(); err != nil {
		return err
	}
	if _, err := a.stepTarget(transfer.Input{Kind: transfer.InAdopt, Epoch: 1}); err != nil {
		return err
	}
	if err := a.openLog(1); err != nil {
		return err
	}
	if _, err := a.log.Append(journal.KindEpoch, 1, a.n.wallTime(), journal.EpochStart{Epoch: 1, Holder: string(a.n.id)}); err != nil {
		return err
	}
	if model != nil {
		mc := journal.ModelChange{Provider: model.Provider, API: model.API, Model: model.Model}
		if _, err := a.log.Append(journal.KindModelChange, 1, a.n.wallTime(), mc); err != nil {
			return err
		}
	}
	if task != "" {
		if _, err := a.log.Append(journal.KindUser, 1, a.n.wallTime(), journal.UserMessage{Text: task}); err != nil {
			return err
		}
	}
	return a.commitLocked()
}

// StopAgent implements api.LocalService: the runner stops at a step
// boundary and stays stopped across restarts.
func (n *Node) StopAgent(ctx context.Context, id string) (api.AgentStatus, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return api.AgentStatus{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.meta.Run = false
	if err := a.saveMeta(); err != nil {
		return api.AgentStatus{}, err
	}
	if err := a.stopLocked("stopped by operator"); err != nil {
		return api.AgentStatus{}, err
	}
	return a.status(), nil
}

// StartAgent implements api.LocalService. It refuses unless this node holds
// a valid holder record for the agent and no move keeps it frozen.
func (n *Node) StartAgent(ctx context.Context, id string) (api.AgentStatus, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return api.AgentStatus{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.src.machine != nil && a.src.machine.PastNoReturn() {
		st := a.src.machine.State()
		return api.AgentStatus{}, fmt.Errorf("%w: %s: move %s to %s is past the point of no return; `capsule move resolve` settles it", api.ErrConflict, id, st.Move, st.Peer)
	}
	if errors.Is(a.blocked, ErrJournalRefused) {
		a.blocked = nil // checked again as the journal opens
	}
	if _, ok := a.mayRun(); !ok {
		return api.AgentStatus{}, fmt.Errorf("%w: %s: %s", api.ErrConflict, id, a.why())
	}
	a.meta.Run = true
	if err := a.saveMeta(); err != nil {
		return api.AgentStatus{}, err
	}
	if err := a.startLocked(journal.KindResumed, journal.Resumed{Reason: "started by operator"}); err != nil {
		if errors.Is(err, ErrJournalRefused) {
			return api.AgentStatus{}, fmt.Errorf("%w: %s: %v", api.ErrConflict, id, err)
		}
		return api.AgentStatus{}, err
	}
	return a.status(), nil
}

// Move implements api.LocalService: it starts the move and reports its
// progress until it ends, waits for its resolution (outcome "waiting"), or
// ctx is done; the move goes on regardless.
func (n *Node) Move(ctx context.Context, id string, req api.MoveRequest, progress func(api.MoveProgress)) (api.MoveResult, error) {
	to, err := ParseID(req.To)
	if err != nil {
		return api.MoveResult{}, fmt.Errorf("%w: %v", api.ErrInvalid, err)
	}
	mr, err := n.startMove(id, to)
	if err != nil {
		return api.MoveResult{}, err
	}
	if progress != nil {
		mr.mu.Lock()
		mr.subs = append(mr.subs, progress)
		mr.mu.Unlock()
	}
	select {
	case <-mr.done:
		return mr.result(id, n.id), nil
	case <-mr.waiting:
		// Activate was sent and its fate is unknown: the agent stays frozen
		// while the node keeps resolving; the caller learns it now.
		return mr.result(id, n.id), nil
	case <-ctx.Done():
		return mr.result(id, n.id), ctx.Err()
	}
}

// MoveStatus implements api.LocalService.
func (n *Node) MoveStatus(ctx context.Context, id string) (api.MoveStatus, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return api.MoveStatus{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.src.move != nil {
		return a.moveStatus(), nil
	}
	if a.src.machine != nil {
		st := a.src.machine.State()
		return api.MoveStatus{MoveID: st.Move, To: st.Peer, Epoch: st.Epoch, Phase: a.src.machine.Phase(), Outcome: string(a.src.machine.Outcome()), Reason: st.Note}, nil
	}
	return api.MoveStatus{Phase: api.PhaseNone}, nil // never moved from this node: not an error
}

// Resolve implements api.LocalService: `capsule move resolve`. Without
// Force it asks the target again (a fencing resolve); with Force the
// operator overrides a waiting or stale move: the agent resumes here at a
// new epoch above every epoch this node knows, recording who forced it;
// a rolled-back move still asking its target to discard its staging gives
// that up (giveUpAbort), so that the agent may move again.
func (n *Node) Resolve(ctx context.Context, id string, req api.ResolveRequest) (api.MoveStatus, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return api.MoveStatus{}, err
	}
	a.mu.Lock()
	if a.src.machine == nil {
		a.mu.Unlock()
		return api.MoveStatus{}, fmt.Errorf("%w: agent %s has no move to resolve", api.ErrNotFound, id)
	}
	if req.Force && a.src.machine.Phase() == phaseAborting {
		err := a.giveUpAbort(req.By)
		st := a.src.machine.State()
		a.mu.Unlock()
		if err != nil {
			return api.MoveStatus{}, fmt.Errorf("%w: %v", api.ErrConflict, err)
		}
		return api.MoveStatus{MoveID: st.Move, To: st.Peer, Epoch: st.Epoch, Phase: a.src.machine.Phase(), Outcome: string(transfer.OutcomeRolledBack), Reason: st.Note}, nil
	}
	in := transfer.Input{Kind: transfer.InResolve}
	if req.Force {
		by := req.By
		if by == "" {
			by = "operator"
		}
		in = transfer.Input{Kind: transfer.InForce, Operator: by, Epoch: a.holder.MaxEpoch() + 1}
	}
	if a.src.move == nil {
		st := a.src.machine.State()
		a.src.move = newMoveRun(st.Move, ID(st.Peer), st.Epoch)
	}
	mr := a.src.move
	a.mu.Unlock()
	mr.mu.Lock()
	driving := mr.driving
	mr.mu.Unlock()
	if driving {
		mr.inputs <- in
	} else {
		n.drive(a, mr, in)
	}
	return n.waitSettled(ctx, a, mr)
}

// phaseAborting is the phase of a rolled-back source still asking its
// target to discard the move's staging (transfer's Source.Phase), shown
// to users as api.PhaseAborting.
const phaseAborting = api.PhaseAborting

// giveUpAbort stops cleaning up a rolled-back move at once, as running out
// of its abort budget would: the agent already runs here at its old
// epoch, only the target's staging is at stake, and the target discards
// it when a newer offer reaches it. The source then lets a new move
// start. Caller holds a.mu.
func (a *tenant) giveUpAbort(by string) error {
	budget := a.n.cfg.AbortRetries
	if budget < 0 {
		return fmt.Errorf("move %s: the abort is retried for ever (AbortRetries < 0); it ends when %s answers", a.src.machine.State().Move, a.src.machine.State().Peer)
	}
	for i := 0; i <= budget && a.src.machine.Phase() == phaseAborting; i++ {
		a.src.machine.Step(transfer.Input{Kind: transfer.InSendFailed}) // no records: a give-up changes nothing durable
	}
	if !a.src.machine.Done() {
		return fmt.Errorf("move %s is still %s", a.src.machine.State().Move, a.src.machine.Phase())
	}
	if by == "" {
		by = "operator"
	}
	a.n.log.Warn("abort given up", "agent", a.id, "move", a.src.machine.State().Move, "target", a.src.machine.State().Peer, "by", by)
	return nil
}

// waitSettled waits until the move's driver has nothing left to do, or a
// few retry intervals, and reports the move's status.
func (n *Node) waitSettled(ctx context.Context, a *tenant, mr *moveRun) (api.MoveStatus, error) {
	for i := 0; i < 50; i++ {
		mr.mu.Lock()
		driving := mr.driving
		mr.mu.Unlock()
		if !driving {
			break
		}
		select {
		case <-ctx.Done():
			return mr.status(), ctx.Err()
		case <-n.clock.After(n.cfg.RetryInterval / 4):
		}
	}
	return mr.status(), nil
}
