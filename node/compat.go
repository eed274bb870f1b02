package node

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agentcapsule/capsule/compat"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// The checks of FORMAT §11.9 before a node resumes an agent it opens: at
// start (and every start of the runner, so also after a rollback), and on a
// move's target during prepare, before the point of no return. A refusal
// blocks the agent with the reason and writes nothing; a tool mapping the
// spec or the release declares is journaled before any other event of the
// resume.

// ErrCompat marks an agent the node does not resume because the checks of
// FORMAT §11.9 refuse it under the spec in force and this release's tools.
var ErrCompat = errors.New("node: compatibility check refused")

// CompatError is the refusal, with the report that says why.
type CompatError struct {
	Report *compat.Report
}

// Error names every issue that refuses, with its events.
func (e *CompatError) Error() string {
	var parts []string
	for _, is := range e.Report.Issues {
		if is.Action == compat.ActionRefuse {
			parts = append(parts, fmt.Sprintf("%s: %s", is.Code, is.Message))
		}
	}
	return fmt.Sprintf("%v (release %s): %s", ErrCompat, e.Report.Release, strings.Join(parts, "; "))
}

// Unwrap returns ErrCompat.
func (e *CompatError) Unwrap() error { return ErrCompat }

// compatRelease is this release as the node runs the agent: its built-in
// table, and, when the node was given its own toolbox (Config.Tools: tests
// and embedders, offered instead of the workspace tools), the tools that
// toolbox declares, external and without a rule of their own.
func (a *tenant) compatRelease() compat.Release {
	r := compat.Current()
	if a.n.cfg.Tools == nil {
		return r
	}
	tb, c, err := a.n.cfg.Tools(a.work())
	if err != nil {
		return r // the agent cannot run without its tools: the runner reports it
	}
	defer c.Close()
	for _, t := range tb.Tools() {
		if _, ok := r.Tools[t.Name]; !ok {
			r.Tools[t.Name] = compat.Builtin{Effect: schema.EffectExternal, Approval: schema.ApprovalNever}
		}
	}
	return r
}

// compatCheck runs compat.Check on the capsule in capDir, its journal as
// the file holds it, for release r.
func compatCheck(fsys vfs.FS, capDir string, r compat.Release) (*compat.Report, error) {
	read := func(rel string, optional bool) ([]byte, error) {
		b, err := vfs.ReadFile(fsys, filepath.Join(capDir, filepath.FromSlash(rel)))
		if optional && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return b, err
	}
	var in compat.Input
	var err error
	if in.Manifest, err = read(manifest.FileName, false); err != nil {
		return nil, fmt.Errorf("compat: %w", err)
	}
	if in.Spec, err = read(manifest.EnvironmentPath, false); err != nil {
		return nil, fmt.Errorf("compat: %w", err)
	}
	if in.Index, err = read(manifest.IndexPath, true); err != nil {
		return nil, fmt.Errorf("compat: %w", err)
	}
	f, err := fsys.Open(filepath.Join(capDir, filepath.FromSlash(manifest.JournalPath)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("compat: %w", err)
	}
	if f != nil {
		defer f.Close()
		in.Journal = f
	}
	return compat.Check(in, r)
}

// compatGate checks the agent before its runner starts at epoch, on the
// open journal: a refusal blocks it (nothing written), mappings are
// appended first. Caller holds a.mu.
func (a *tenant) compatGate(epoch uint64) error {
	rep, err := compatCheck(a.n.fsys, a.capsule(), a.compatRelease())
	if err != nil {
		return a.refuse(err)
	}
	if rep.Refused && a.n.cfg.DiscardRefused {
		if rep, err = a.discardRefused(rep); err != nil {
			return err
		}
	}
	if rep.Refused {
		return a.refuse(&CompatError{Report: rep})
	}
	for _, ap := range rep.Append {
		if _, err := a.log.Append(journal.Kind(ap.Kind), epoch, a.n.wallTime(), []byte(ap.Body)); err != nil {
			return fmt.Errorf("compat: append %s: %w", ap.Kind, err)
		}
		a.n.log.Info("tool mapping journaled", "agent", a.id, "body", string(ap.Body))
	}
	return nil
}

// discardRefused is the node's policy at restore (Config.DiscardRefused)
// for an agent whose resume rep refuses: the agent is discarded (its
// journal kept, discardLocked) when FORMAT §11.9.4 allows it, and blocked
// with both reasons otherwise. It returns the check of the fresh journal
// (on the new open log), which the gate then applies as it would have the
// first. Caller holds a.mu; the runner is not running.
func (a *tenant) discardRefused(rep *compat.Report) (*compat.Report, error) {
	refusal := &CompatError{Report: rep}
	if err := a.checkDiscard(); err != nil {
		return nil, a.refuse(fmt.Errorf("%w; the node's policy would discard it, but: %v", refusal, err))
	}
	res, err := a.discardLocked()
	if err != nil {
		return nil, a.refuse(fmt.Errorf("%w; discarding it failed: %v", refusal, err))
	}
	a.n.log.Warn("agent discarded at restore: its resume was refused", "agent", a.id, "refusal", refusal.Error(), "set_aside", res.SetAside, "events", res.Events)
	again, err := compatCheck(a.n.fsys, a.capsule(), a.compatRelease())
	if err != nil {
		return nil, a.refuse(err)
	}
	return again, nil
}

// prepareCompat is the check of a move's target, on the staged capsule,
// when the source's release is not this one (an agent written by this
// release was checked when it last started). It returns the problems that
// refuse the move, and keeps the mappings to journal when the agent starts
// here.
func (a *tenant) prepareCompat(capDir string, m *manifest.Manifest) []string {
	a.tgt.mappings = nil
	if m.Writer.Release == a.n.writer().Release {
		return nil
	}
	rep, err := compatCheck(a.n.fsys, capDir, a.compatRelease())
	if err != nil {
		return []string{err.Error()}
	}
	if rep.Refused {
		return []string{(&CompatError{Report: rep}).Error()}
	}
	a.tgt.mappings = rep.Append
	return nil
}

// takeMappings prepends the mappings the prepare found to the events that
// start the agent after a move (FORMAT §11.9.1: before any other event).
func (a *tenant) takeMappings(kinds []journal.Kind, bodies []any) ([]journal.Kind, []any) {
	var ks []journal.Kind
	var bs []any
	for _, ap := range a.tgt.mappings {
		ks, bs = append(ks, journal.Kind(ap.Kind)), append(bs, []byte(ap.Body))
	}
	a.tgt.mappings = nil
	return append(ks, kinds...), append(bs, bodies...)
}
