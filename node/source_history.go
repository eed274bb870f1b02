package node

import (
	"errors"
	"fmt"

	"github.com/agentcapsule/capsule/node/record"
	"github.com/agentcapsule/capsule/transfer"
)

// currentSource returns this node's latest move of the agent if it
// concerns the agent as this node holds it now, or held it last: nil when
// there is none, or when the agent has come back since (docs/PROTOCOL.md
// §7.3): the move of a round trip's first leg is history once the target
// record holds the agent at a newer epoch.
func (a *tenant) currentSource() *transfer.Source {
	if a.src.machine == nil || a.holder == nil || sourceIsHistory(a.src.machine.State(), a.holder) {
		return nil
	}
	return a.src.machine
}

// sourceIsHistory reports whether a source record st of this node is older
// than the holding the target record t grants: t holds the agent at or
// above the move's epoch (the agent came back, or a force adopted a newer
// epoch). While t holds the agent below st.Epoch the record is current
// whatever MaxEpoch says: a holder can burn epochs (an abort of an offer
// it refused) in the middle of its own move. While t holds nothing the
// record is the move the agent left in, and names its successor.
func sourceIsHistory(st transfer.SourceState, t *transfer.Target) bool {
	h := t.Holder()
	return h > 0 && st.Epoch <= h
}

// mayReplay reports whether the recovery of source record st may act:
// not when the record is history, and not when t released the agent and
// has seen an epoch above the move's since (a move back was promised): the
// retire finished before, and nothing is ever removed on the strength of a
// record older than the newest the node knows of.
func mayReplay(st transfer.SourceState, t *transfer.Target) bool {
	return !sourceIsHistory(st, t) && !(t.Holder() == 0 && t.MaxEpoch() > st.Epoch)
}

// recoverSource rebuilds the agent's latest move from source.json, if any,
// and returns the Ready the host must execute now.
func (a *tenant) recoverSource() (transfer.Ready, bool, error) {
	rec, err := record.Load(a.n.fsys, a.path(record.SourceFile), a.n.id, a.id)
	var st *transfer.SourceState
	switch {
	case err == nil:
		st = rec.Record.Source
	case !errors.Is(err, record.ErrNoHolder):
		return transfer.Ready{}, false, err
	}
	if err := a.checkCapsule(st); err != nil {
		return transfer.Ready{}, false, err
	}
	if st == nil || sourceIsHistory(*st, a.holder) {
		// No move, or the agent left in that move and has come back since:
		// the record is history. Replaying it would retire the live
		// capsule (and freeze an agent this node holds).
		return transfer.Ready{}, false, nil
	}
	src, rd, err := transfer.RecoverSource([]transfer.Record{rec.Record}, a.n.sourceConfig())
	if err != nil {
		return transfer.Ready{}, false, err
	}
	a.src.machine = src // it names the successor, replayed or not
	if !mayReplay(*st, a.holder) {
		return transfer.Ready{}, false, nil
	}
	return rd, true, nil
}

// ErrRecordBehind marks an agent whose capsule folder shows a newer state
// than the records that should justify it: a holder record older than the
// newest the node knows of (a damaged or restored holder.jsonl). The node
// fails closed: it neither runs the agent nor removes anything of it.
var ErrRecordBehind = errors.New("node: holder record older than the capsule")

// checkCapsule compares the capsule folder, if there is one, with the
// holder record and the source record st (nil: none). The capsule's
// manifest names the epochs it was committed under (its holder's and its
// journal heads'); a node that holds the agent holds it at no lower epoch,
// and a node that does not hold it keeps a capsule folder only while it
// finishes retiring it after a move from the epoch the capsule was
// committed under. Anything else means a record was lost, and replaying
// the records left would act on an older state than the newest the node
// has known (issue: a RETIRED record replayed over an agent that came
// back deleted it).
func (a *tenant) checkCapsule(st *transfer.SourceState) error {
	if !exists(a.n.fsys, a.capsule()) {
		return nil
	}
	h := a.holder.Holder()
	m, err := readManifestFile(a.n.fsys, a.capsule())
	switch {
	case err != nil && h > 0:
		return nil // the journal check refuses it as the node opens it
	case err != nil:
		return fmt.Errorf("%w: %s does not hold the agent and the capsule folder's manifest does not read (%v): it may be newer than the records", ErrRecordBehind, a.path(record.HolderFile), err)
	}
	seen := m.Holder.Epoch
	for _, head := range m.Journal.Heads {
		seen = max(seen, head.Epoch)
	}
	switch {
	case h > 0 && seen > h:
		return fmt.Errorf("%w: %s holds the agent at epoch %d, the capsule was committed under epoch %d", ErrRecordBehind, a.path(record.HolderFile), h, seen)
	case h == 0 && (st == nil || st.Phase != transfer.RecRetired || seen > st.Holder):
		return fmt.Errorf("%w: %s does not hold the agent (highest epoch %d), but the capsule folder is there, committed under epoch %d, and no move of this node retired it", ErrRecordBehind, a.path(record.HolderFile), a.holder.MaxEpoch(), seen)
	}
	return nil
}
