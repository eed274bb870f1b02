package node

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/compat"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/transfer"
)

// The version exchange of a move (docs/PROTOCOL.md §4b, FORMAT §11.8): a
// target states, per kind, the versions it reads in its replies to have
// and offer; the source checks its capsule against them before it freezes
// the agent (on the want) and again on the frozen state (on the promise),
// and sends the journal's down-converted view or refuses the move.

// versionedReply is a reply with the versions its sender reads. An older
// node sends no reads member, and reads what it does not state.
type versionedReply struct {
	transfer.Message
	Reads map[schema.Kind]compat.Range `json:"reads,omitempty"`
}

// reads returns, per kind, the versions this node reads: its schema
// registry's floor to current, with the test knob Config.ReadJournalUpTo
// applied to the journal.
func (n *Node) reads() map[schema.Kind]compat.Range {
	out := map[schema.Kind]compat.Range{}
	for _, h := range schema.Histories() {
		out[h.Kind] = compat.Range{Floor: h.Floor, Current: h.Current}
	}
	if v := n.cfg.ReadJournalUpTo; v > 0 {
		r := out[schema.Journal]
		r.Current = max(r.Floor, min(r.Current, v))
		out[schema.Journal] = r
	}
	return out
}

// canRead reports whether this node reads version v of kind k.
func (n *Node) canRead(k schema.Kind, v int) bool {
	r, ok := n.reads()[k]
	return ok && v >= r.Floor && v <= r.Current
}

// replyBody encodes a reply, stating this node's versions on the replies
// that precede a freeze and an offer's acceptance.
func (n *Node) replyBody(reply *transfer.Message) json.RawMessage {
	if reply.Type != transfer.MsgWant && reply.Type != transfer.MsgPromise {
		return mustJSON(reply)
	}
	return mustJSON(versionedReply{Message: *reply, Reads: n.reads()})
}

// peerReads reads the versions a reply states. A reply without them comes
// from release 0.1.0 or 0.2.0, which read journal version 1 only; what else
// such a node reads its own prepare checks.
func peerReads(body []byte) map[schema.Kind]compat.Range {
	var v struct {
		Reads map[schema.Kind]compat.Range `json:"reads"`
	}
	if json.Unmarshal(body, &v) != nil || len(v.Reads) == 0 {
		return map[schema.Kind]compat.Range{schema.Journal: {Floor: 1, Current: 1}}
	}
	return v.Reads
}

// pinning is what the version exchange decided for one move: the journal
// version the frozen manifest records (the down-converted view when the
// target reads an older one).
type pinning struct {
	mu      sync.Mutex
	journal int // 0: not decided, journal.SchemaVersion
}

func (p *pinning) set(v int) {
	p.mu.Lock()
	p.journal = v
	p.mu.Unlock()
}

// journalVersion is the journal version the frozen manifest records.
func (p *pinning) journalVersion() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.journal == 0 {
		return journal.SchemaVersion
	}
	return p.journal
}

// pin checks the capsule against the versions the target reads. It returns
// "" when the target reads it, or reads the journal's down-converted view
// (which it records for the freeze); otherwise the refusal, naming the kind
// and the versions. frozen is set on the promise: the frozen manifest is
// already offered, so the view can no longer change, only be refused.
func (a *tenant) pin(mr *moveRun, reads map[schema.Kind]compat.Range, frozen bool) string {
	m, size, err := a.pinState()
	if err != nil {
		return "version exchange (checked by the source): " + err.Error()
	}
	for _, k := range schema.Kinds {
		r, ok := reads[k]
		v := schemaOf(m, k)
		if !ok || k == schema.Journal || v >= r.Floor && v <= r.Current {
			continue
		}
		return fmt.Sprintf("version exchange (checked by the source): this capsule holds %s version %d, the target reads %s versions %d to %d; no step hands it down without loss, so the move is refused",
			k, v, k, r.Floor, r.Current)
	}
	r := reads[schema.Journal]
	view := journal.SchemaVersion
	if r.Current < view {
		if err := a.journalView(size, r.Current); err != nil {
			return fmt.Sprintf("version exchange (checked by the source): the target reads journal versions %d to %d and this journal, of version %d, cannot be handed down: %v",
				r.Floor, r.Current, journal.SchemaVersion, err)
		}
		view = r.Current
	}
	if frozen {
		if got := mr.pin.journalVersion(); got > r.Current {
			return fmt.Sprintf("version exchange (checked by the source): the frozen manifest records journal version %d, the target reads %d to %d (it stated its versions only after the freeze)",
				got, r.Floor, r.Current)
		}
		return ""
	}
	mr.pin.set(view)
	return ""
}

// pinState reads the committed manifest and how many bytes the journal
// holds so far.
func (a *tenant) pinState() (*manifest.Manifest, int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m, err := readManifestFile(a.n.fsys, a.capsule())
	if err != nil {
		return nil, 0, err
	}
	size := m.Journal.Bytes
	if a.log != nil {
		size = a.log.Summary().Bytes
	}
	return m, size, nil
}

// journalView checks that every line of the journal's first size bytes
// reads at version to (FORMAT §11.7.3).
func (a *tenant) journalView(size int64, to int) error {
	f, err := a.n.fsys.Open(filepath.Join(a.capsule(), filepath.FromSlash(manifest.JournalPath)))
	if err != nil {
		return err
	}
	defer f.Close()
	return capsule.CheckJournalView(io.LimitReader(f, size), to)
}

func schemaOf(m *manifest.Manifest, k schema.Kind) int {
	if v, ok := m.Schemas[k]; ok {
		return v
	}
	return 1
}

// refusedBySource turns a reply into the refusal the source acts on when
// the version exchange refuses the move: before the freeze (a want) the
// move is abandoned, after it (a promise) rolled back and aborted on the
// target, never past the point of no return.
func refusedBySource(tm transfer.Message, why string) transfer.Message {
	return transfer.Message{Type: transfer.MsgRefused, Agent: tm.Agent, Move: tm.Move, Epoch: tm.Epoch, From: tm.From, To: tm.To,
		Re: tm.Re, Reason: transfer.ReasonPrepare, Problems: []string{why}, MaxEpoch: tm.MaxEpoch, Holder: tm.Holder}
}
