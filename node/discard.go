package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/compat"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/vfs"
)

// discardedPrefix names the files an agent's discarded journals are kept
// as, in its folder: discarded-<UTC time>.jsonl (FORMAT §11.9.4).
const discardedPrefix = "discarded-"

// DiscardAgent implements api.LocalService: `capsule agent discard`. An
// ephemeral agent this node holds is started over from its environment
// spec and workspace with an empty conversation. It is refused with
// api.ErrConflict, naming the event, when compat.CanDiscard refuses; the
// journal is checked before the runner stops and again after, and a
// runner stopped for a discard refused the second time is started again.
// Nothing is deleted: the old journal is copied to discarded-<time>.jsonl
// in the agent's folder before the capsule forgets it.
func (n *Node) DiscardAgent(ctx context.Context, id string) (api.DiscardResult, error) {
	a, err := n.getTenant(id)
	if err != nil {
		return api.DiscardResult{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.listed() {
		return api.DiscardResult{}, fmt.Errorf("%w: agent %s", api.ErrNotFound, id)
	}
	if why := a.whyNotDiscardable(); why != "" {
		return api.DiscardResult{}, fmt.Errorf("%w: agent %s: %s", api.ErrConflict, id, why)
	}
	if err := a.checkDiscard(); err != nil {
		return api.DiscardResult{}, err
	}
	running := a.run != nil
	if err := a.stopLocked("discard requested"); err != nil {
		return api.DiscardResult{}, fmt.Errorf("discard agent %s: %w", id, err)
	}
	if err := a.checkDiscard(); err != nil {
		return api.DiscardResult{}, a.restartAfter(running, "discard refused", err)
	}
	res, err := a.discardLocked()
	if err != nil {
		return api.DiscardResult{}, fmt.Errorf("discard agent %s: %w", id, err)
	}
	if running {
		if err := a.runLocked(); err != nil {
			return api.DiscardResult{}, fmt.Errorf("discard agent %s: %w", id, err)
		}
	}
	n.log.Info("agent discarded", "agent", id, "set_aside", res.SetAside, "events", res.Events)
	res.Agent = a.status()
	return res, nil
}

// whyNotDiscardable says why the agent may not be discarded here, or "".
// Caller holds a.mu.
func (a *tenant) whyNotDiscardable() string {
	switch {
	case a.blocked != nil:
		return "it is blocked (" + a.blocked.Error() + "); nothing of a blocked agent is discarded"
	case !a.hosted():
		return "this node does not hold it; discard it where it is held"
	case a.src.machine != nil && !a.src.machine.Done():
		return "move " + a.src.machine.State().Move + " is " + a.src.machine.Phase()
	case a.holder.Pending() != nil || a.tgt.in != nil:
		return "an incoming move is pending"
	}
	if _, ok := a.mayRun(); !ok {
		return a.why()
	}
	return ""
}

// restartAfter starts the runner again when it ran before a refused
// discard stopped it, and returns refused.
func (a *tenant) restartAfter(running bool, reason string, refused error) error {
	if !running {
		return refused
	}
	if err := a.startLocked(journal.KindResumed, journal.Resumed{Reason: reason}); err != nil {
		return fmt.Errorf("%w (and the runner did not start again: %v)", refused, err)
	}
	return refused
}

// checkDiscard runs compat.CanDiscard on the capsule's environment spec
// and every complete line of its journal, and returns api.ErrConflict with
// each refusal when it refuses. Caller holds a.mu.
func (a *tenant) checkDiscard() error {
	c, err := capsule.Open(a.n.fsys, a.capsule(), capsule.Config{})
	if err != nil {
		return fmt.Errorf("discard agent %s: %w", a.id, err)
	}
	spec, err := c.ReadFile(manifest.EnvironmentPath, envspec.MaxSize)
	if err != nil {
		return fmt.Errorf("discard agent %s: environment spec: %w", a.id, err)
	}
	data, err := vfs.ReadFile(a.n.fsys, a.journalPath())
	if err != nil {
		return fmt.Errorf("discard agent %s: journal: %w", a.id, err)
	}
	// A runner may be writing its next line: only whole lines are judged.
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	d, err := compat.CanDiscard(spec, bytes.NewReader(data), compat.Current())
	if err != nil {
		return fmt.Errorf("%w: agent %s may not be discarded: %v", api.ErrConflict, a.id, err)
	}
	if d.Allowed {
		return nil
	}
	why := make([]string, len(d.Refusals))
	for i, r := range d.Refusals {
		why[i] = r.Code + ": " + r.Message
	}
	return fmt.Errorf("%w: agent %s may not be discarded (FORMAT §11.9.4): %s", api.ErrConflict, a.id, strings.Join(why, "; "))
}

func (a *tenant) journalPath() string { return filepath.Join(a.capsule(), journalInCap) }

// discardLocked gives the stopped agent a new journal, in an order that a
// crash leaves safe (FORMAT §11.9.4):
//  1. the old journal is copied, durably, to discarded-<time>.jsonl in the
//     agent's folder;
//  2. the manifest commits an empty journal: after a crash here the old
//     lines are an uncommitted tail that checks by chain, and the agent
//     goes on undiscarded;
//  3. the journal file is replaced by an empty one;
//  4. the new journal gets the epoch, the old journal's last model_change
//     (the agent keeps its model, not its conversation) and a resumed
//     event whose reason says it was discarded, and is committed.
//
// Caller holds a.mu; the runner is stopped.
func (a *tenant) discardLocked() (api.DiscardResult, error) {
	fsys := a.n.fsys
	if a.log != nil {
		_ = a.log.Close()
		a.log = nil
	}
	old, _, err := agentlog.Read(fsys, a.journalPath())
	if err != nil {
		return api.DiscardResult{}, err
	}
	name, err := a.setAside()
	if err != nil {
		return api.DiscardResult{}, err
	}
	holder := manifest.Holder{Node: string(a.n.id), Epoch: a.holder.Holder()}
	empty := journal.Summary{Digest: digest.FromBytes(nil), Heads: map[string]journal.Head{}}
	if err := commitHolder(fsys, a.capsule(), holder, empty, a.n.writer()); err != nil {
		return api.DiscardResult{}, err
	}
	if err := vfs.WriteFile(fsys, a.journalPath(), nil, 0o644); err != nil {
		return api.DiscardResult{}, err
	}
	a.attach = agentlog.Attachments{}
	if err := a.clearToolMark(); err != nil {
		return api.DiscardResult{}, err
	}
	reason := fmt.Sprintf("discarded: ephemeral; the old journal (%d events) is kept as %s", len(old), name)
	if err := a.startJournal(lastModel(old), reason); err != nil {
		return api.DiscardResult{}, err
	}
	return api.DiscardResult{SetAside: name, Events: int64(len(old))}, a.commitHolderLocked()
}

// setAside copies the journal durably to a new discarded-<time>.jsonl in
// the agent's folder and returns its name.
func (a *tenant) setAside() (string, error) {
	name := discardedPrefix + a.n.clock.Now().UTC().Format("20060102T150405.000000000Z") + ".jsonl"
	if exists(a.n.fsys, a.path(name)) {
		return "", fmt.Errorf("set journal aside: %s already exists", name)
	}
	f, err := a.n.fsys.Open(a.journalPath())
	if err != nil {
		return "", fmt.Errorf("set journal aside: %w", err)
	}
	defer f.Close()
	if err := vfs.WriteFileFrom(a.n.fsys, a.path(name), io.Reader(f), 0o600); err != nil {
		return "", fmt.Errorf("set journal aside: %w", err)
	}
	return name, nil
}

// startJournal opens the empty journal and appends its first events: the
// epoch, model (a model_change body, or nil) and a resumed with reason.
func (a *tenant) startJournal(model json.RawMessage, reason string) error {
	epoch := a.holder.Holder()
	if err := a.openLog(epoch); err != nil {
		return err
	}
	kinds := []journal.Kind{journal.KindEpoch}
	bodies := []any{journal.EpochStart{Epoch: epoch, Holder: string(a.n.id)}}
	if model != nil {
		kinds, bodies = append(kinds, journal.KindModelChange), append(bodies, model)
	}
	kinds, bodies = append(kinds, journal.KindResumed), append(bodies, journal.Resumed{Reason: reason})
	_, err := a.log.AppendAll(epoch, a.n.wallTime(), kinds, bodies)
	return err
}

// lastModel returns the body of the last model_change of events, or nil.
func lastModel(events []journal.Event) json.RawMessage {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == journal.KindModelChange {
			return events[i].Body
		}
	}
	return nil
}
