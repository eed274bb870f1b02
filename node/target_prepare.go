package node

import (
	"fmt"
	"path/filepath"

	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node/agentlog"
	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
)

// prepare is ActPrepare: it checks this node can run the staged agent
// (every schema version readable, every secret the environment names
// available here, the journal renders for the agent's current model),
// brings the staged workspace from the shadow's state to the move's (only
// the files that differ), and makes the whole staging durable in one
// batch of concurrent syncs: PREPARED, which the Target persists next,
// may only follow a durable staging (docs/PROTOCOL.md §5). Last, every
// MCP server of the spec must start on the staged workspace (prepareMCP).
func (a *tenant) prepare(act transfer.Action) []string {
	in := a.tgt.in
	if in == nil || in.move != act.Move || in.snap == nil || in.rendered == nil {
		return []string{"prepare: the move's staging is not verified"}
	}
	var probs []string
	for _, k := range schema.Kinds {
		if v, ok := in.m.Schemas[k]; ok && !a.n.canRead(k, v) {
			probs = append(probs, fmt.Sprintf("schema %s version %d is not readable by release %s", k, v, schema.Release))
		}
	}
	probs = append(probs, a.secretProblems(in.capsule())...)
	if spec, err := a.spec(in.capsule()); err == nil { // an unreadable spec is named by secretProblems
		if p := a.n.sandboxProblem(spec); p != "" {
			probs = append(probs, p)
		}
	}
	if len(probs) == 0 {
		probs = a.prepareCompat(in.capsule(), in.m)
	}
	if len(probs) > 0 {
		return probs
	}
	opened := make(chan error, 1)
	go func() {
		var err error
		if in.log == nil { // the journal copy is normally staged open
			in.log, err = agentlog.Open(a.n.fsys, filepath.Join(in.capsule(), filepath.FromSlash(manifest.JournalPath)), string(a.n.id), act.Epoch, in.m.Journal.Bytes)
		}
		opened <- err
	}()
	err := store.Checkout(a.n.fsys, in.blobFolder(), filepath.Join(in.dir, workDir), in.base, in.snap, &in.batch)
	if err == nil {
		err = a.noteMeta(in, !act.Stopped)
	}
	if err == nil {
		err = in.batch.Flush(a.n.fsys)
	}
	rerr, oerr := <-in.rendered, <-opened
	switch {
	case err != nil:
		return []string{"staging: " + err.Error()}
	case rerr != nil:
		return []string{rerr.Error()}
	case oerr != nil:
		return []string{"journal: " + oerr.Error()}
	}
	return a.prepareMCP(in)
}

// noteMeta writes agent.json, if it changes, with the staging: its name,
// and whether the operator wants it running once the move activates (run,
// the intent the prepare carried). It grants nothing by itself: only a
// holder record lets a node run an agent.
func (a *tenant) noteMeta(in *inMove, run bool) error {
	meta := record.Meta{Name: in.m.Agent.Name, Run: run}
	if meta == a.meta && exists(a.n.fsys, a.path(record.MetaFile)) {
		return nil
	}
	if a.metaRefused != nil {
		return a.metaRefused
	}
	b, err := record.EncodeMeta(meta)
	if err != nil {
		return err
	}
	if err := in.batch.WriteAtomic(a.n.fsys, a.path(record.MetaFile), b, 0o600); err != nil {
		return err
	}
	a.meta = meta
	a.baseURL.Store(meta.BaseURL)
	return nil
}

// secretProblems names the secrets the staged environment needs that this
// node lacks. Only names appear: values are never read into a message.
func (a *tenant) secretProblems(dir string) []string {
	names, err := a.specSecrets(dir)
	if err != nil {
		return []string{err.Error()}
	}
	if missing := a.n.secrets.Missing(names); len(missing) > 0 {
		return []string{(&MissingSecretsError{Names: missing}).Error()}
	}
	return nil
}

// specSecrets returns the secret names the environment spec of the
// capsule at dir declares (for the agent and for its tools).
func (a *tenant) specSecrets(dir string) ([]string, error) {
	spec, err := a.spec(dir)
	if err != nil {
		return nil, err
	}
	names := append([]string(nil), spec.Secrets...)
	for _, t := range spec.Tools {
		names = append(names, t.Secrets...)
	}
	return names, nil
}
