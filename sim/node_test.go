package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// agent is the one agent every simulation moves around.
const agent = "agent-1"

// event is one journal entry the runner writes: chained by hash, carrying
// the epoch it was written under.
type event struct {
	Seq   uint64 `json:"seq"`
	Epoch uint64 `json:"epoch"`
	Node  string `json:"node"`
	Prev  string `json:"prev,omitempty"`
	ID    string `json:"id"`
}

// line is the event's journal line: "seq epoch node prev id" (prev "-"
// when empty). The simulation's journal is a plain line format so that
// thousands of seeds stay fast.
func (e event) line() []byte {
	prev := e.Prev
	if prev == "" {
		prev = "-"
	}
	return fmt.Appendf(nil, "%d %d %s %s %s\n", e.Seq, e.Epoch, e.Node, prev, e.ID)
}

func parseEvent(line string) (event, bool) {
	f := strings.Fields(line)
	if len(f) != 5 {
		return event{}, false
	}
	seq, err1 := strconv.ParseUint(f[0], 10, 64)
	epoch, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return event{}, false
	}
	e := event{Seq: seq, Epoch: epoch, Node: f[2], Prev: f[3], ID: f[4]}
	if e.Prev == "-" {
		e.Prev = ""
	}
	return e, true
}

func encodeJournal(evs []event) []byte {
	var b []byte
	for _, e := range evs {
		b = append(b, e.line()...)
	}
	return b
}

func newEvent(prev []event, epoch uint64, node string) event {
	e := event{Seq: 1, Epoch: epoch, Node: node}
	if n := len(prev); n > 0 {
		e.Seq, e.Prev = prev[n-1].Seq+1, prev[n-1].ID
	}
	e.ID = eventID(e)
	return e
}

func eventID(e event) string {
	return digest.FromString(strconv.FormatUint(e.Seq, 10) + "|" + strconv.FormatUint(e.Epoch, 10) + "|" + e.Node + "|" + e.Prev).String()
}

var errChain = errors.New("sim: journal chain broken")

func checkChain(evs []event) error {
	for i, e := range evs {
		prev := ""
		if i > 0 {
			prev = evs[i-1].ID
		}
		if e.Seq != uint64(i+1) || e.Prev != prev || e.ID != eventID(e) {
			return fmt.Errorf("%w at event %d", errChain, i+1)
		}
	}
	return nil
}

func journalPos(evs []event) transfer.JournalPos {
	if len(evs) == 0 {
		return transfer.JournalPos{}
	}
	return transfer.JournalPos{Count: uint64(len(evs)), Head: evs[len(evs)-1].ID}
}

// crashSignal unwinds a node's processing when a planned crash fires.
type crashSignal struct{ n *node }

// errNoSpace is the injected ENOSPC.
var errNoSpace = errors.New("sim: no space left on device")

// node is one simulated machine: its durable files on a vfs.Mem, its
// machines (rebuilt from the files on restart) and a runner.
type node struct {
	w       *world
	id      string
	fs      *vfs.Mem
	up      bool
	target  *transfer.Target
	source  *transfer.Source
	running uint64 // the epoch the runner runs at; 0 if it does not run
	journal []event
	inv     []transfer.Blob
	out     *outstanding
	// durableMax is the highest epoch in this node's durable records.
	durableMax uint64
	// handling is the request the target side is handling (for coverage).
	handling transfer.MsgType
	// act is the target action under way (for coverage), "" if none.
	act    transfer.ActionKind
	downAt int
}

type outstanding struct {
	msg      transfer.Message
	deadline int
}

// answers reports whether reply answers the outstanding request.
func (o *outstanding) answers(reply transfer.Message) bool {
	return o != nil && reply.Re == o.msg.Type && reply.Move == o.msg.Move && reply.Epoch == o.msg.Epoch
}

const (
	fileTarget  = "t.rec"
	fileSource  = "s.rec"
	fileJournal = "live/journal"
	fileInv     = "live/inv.json"
	fileMan     = "live/manifest"
)

func casPath(d digest.Digest) string { return "cas/" + d.Hex() }

func stagingDir(move string) string { return "staging/" + move }

// write writes name durably (atomic, fsynced), with the planned crash and
// ENOSPC faults around it. label names the write for the fault plan.
func (n *node) write(label, name string, data []byte) error {
	w := n.w
	if w.fault(n, faultCrashBefore, label) {
		panic(crashSignal{n})
	}
	if w.fault(n, faultNoSpace, label) {
		return errNoSpace
	}
	if err := vfs.MkdirAllDurable(n.fs, path.Dir(name), 0o755); err != nil {
		return err
	}
	if w.mutation == mutNoSync && (name == fileTarget || name == fileSource) {
		if err := writeNoSync(n.fs, name, data); err != nil {
			return err
		}
	} else if err := vfs.WriteFile(n.fs, name, data, 0o644); err != nil {
		return err
	}
	if w.fault(n, faultCrashAfter, label) {
		panic(crashSignal{n})
	}
	return nil
}

// writeNoSync is the mutation "records are written without fsync".
func writeNoSync(fsys vfs.FS, name string, data []byte) error {
	f, err := fsys.OpenFile(name, 0x241, 0o644) // O_WRONLY|O_CREATE|O_TRUNC
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (n *node) writeJSON(label, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return n.write(label, name, b)
}

func (n *node) readJSON(name string, v any) bool {
	b, err := vfs.ReadFile(n.fs, name)
	if err != nil {
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		if n.w.mutation != mutNoSync { // that mutation tears records: read them as absent
			n.w.violate("%s: %s is not valid JSON: %v", n.id, name, err)
		}
		return false
	}
	return true
}

// persist makes records durable in order; each record replaces the file
// of its machine (every record carries its machine's full state).
func (n *node) persist(recs []transfer.Record) error {
	for _, r := range recs {
		name, epoch := fileTarget, uint64(0)
		if r.Source != nil {
			name, epoch = fileSource, r.Source.Epoch
		} else {
			epoch = r.Target.MaxEpoch
		}
		if err := n.writeJSON("rec:"+string(r.Kind), name, r); err != nil {
			n.w.cover(coverNoSpace, n.phaseOf("rec:"+string(r.Kind)))
			return err
		}
		n.durableMax = max(n.durableMax, epoch)
		if r.Kind == transfer.RecHolder {
			n.w.committed = max(n.w.committed, r.Target.Holder)
		}
		n.w.trace("%s persist %s", n.id, r.Kind)
	}
	return nil
}

// loadRecords reads this node's durable records.
func (n *node) loadRecords() (t, s *transfer.Record) {
	var tr, sr transfer.Record
	if n.readJSON(fileTarget, &tr) {
		t = &tr
	}
	if n.readJSON(fileSource, &sr) {
		s = &sr
	}
	return t, s
}

func (n *node) hasBlob(b transfer.Blob) bool {
	data, err := vfs.ReadFile(n.fs, casPath(b.Digest))
	return err == nil && int64(len(data)) == b.Size && digest.FromBytes(data) == b.Digest
}

func (n *node) missing(bs []transfer.Blob) []digest.Digest {
	var out []digest.Digest
	for _, b := range bs {
		if !n.hasBlob(b) {
			out = append(out, b.Digest)
		}
	}
	return out
}

// putBlob stores a blob in the CAS store after checking its digest on
// receipt; a corrupted body is refused.
func (n *node) putBlob(label string, d digest.Digest, body []byte) error {
	if digest.FromBytes(body) != d {
		return fmt.Errorf("blob %s: digest mismatch", d.Short())
	}
	return n.write(label, casPath(d), body)
}

func (n *node) inventory() transfer.Inventory {
	inv := transfer.Inventory{Blobs: slices.Clone(n.inv), Journal: journalPos(n.journal)}
	inv.Manifest = digest.FromBytes(manifestBytes(inv.Blobs, inv.Journal))
	return inv
}

// manifestBytes is the simulated manifest: it binds every blob and the
// journal head.
func manifestBytes(bs []transfer.Blob, j transfer.JournalPos) []byte {
	b, _ := json.Marshal(struct {
		Blobs   []transfer.Blob     `json:"blobs"`
		Journal transfer.JournalPos `json:"journal"`
	}{bs, j})
	return b
}

// readJournal reads a journal file; a torn last line is dropped.
func (n *node) readJournal(name string) []event {
	b, err := vfs.ReadFile(n.fs, name)
	if err != nil {
		return nil
	}
	var evs []event
	for _, line := range strings.Split(string(b), "\n") {
		if e, ok := parseEvent(line); ok {
			evs = append(evs, e)
		}
	}
	return evs
}

// loadLive reads the live journal and inventory from disk into the mirror.
func (n *node) loadLive() {
	n.journal, n.inv = n.readJournal(fileJournal), nil
	n.readJSON(fileInv, &n.inv)
	if err := checkChain(n.journal); err != nil {
		n.w.violate("%s: live journal after restart: %v", n.id, err)
	}
}

// recordPhase maps the durable writes whose phase does not depend on context.
var recordPhase = map[string]string{
	"rec:MIGRATING": "Frz", "rec:PROMISED": "Off", "rec:PREPARED": "Prp", "rec:HOLDER": "Act",
	"rec:ACTIVATE_SENT": "Act", "rec:RETIRED": "Ret", "rec:RELEASED": "Ret", "rec:STALE": "Off",
	"rec:ROLLED_BACK": "GC", "freeze": "Frz", "manifest": "Frz",
}

func isSourceRecord(label string) bool {
	switch label {
	case "rec:MIGRATING", "rec:ACTIVATE_SENT", "rec:RETIRED", "rec:ROLLED_BACK", "rec:STALE", "rec:FORCED":
		return true
	}
	return false
}

// phaseOf names the protocol phase of the durable write label at this node.
func (n *node) phaseOf(label string) string {
	if p, ok := recordPhase[label]; ok {
		return p
	}
	switch {
	case strings.HasPrefix(label, "stage:"):
		return "Xfr"
	case strings.HasPrefix(label, "promote:"):
		return "Act"
	}
	return n.phase()
}

// phase names the current protocol phase at this node for coverage.
func (n *node) phase() string {
	switch n.act {
	case transfer.ActVerify:
		return "Ver"
	case transfer.ActPrepare:
		return "Prp"
	case transfer.ActStart:
		return "Act"
	}
	if n.handling != "" {
		return msgPhase(n.handling)
	}
	if n.source != nil {
		return sourcePhase(n.source.Phase())
	}
	return "Frz"
}

func sourcePhase(p string) string {
	switch p {
	case "inventory", "have", "push", "idle":
		return "Inv"
	case "freezing":
		return "Frz"
	case "offering":
		return "Off"
	case "preparing":
		return "Xfr"
	case "activating":
		return "Act"
	case "resolving":
		return "Res"
	case "committed":
		return "Ret"
	}
	return "GC"
}

func msgPhase(t transfer.MsgType) string {
	switch t {
	case transfer.MsgHave, transfer.MsgWant:
		return "Inv"
	case transfer.MsgOffer, transfer.MsgPromise:
		return "Off"
	case transfer.MsgPrepare:
		return "Xfr"
	case transfer.MsgPrepared:
		return "Prp"
	case transfer.MsgActivate, transfer.MsgActivated:
		return "Act"
	case transfer.MsgResolve, transfer.MsgResolved:
		return "Res"
	}
	return "GC"
}

// replyPhase is the phase a reply belongs to.
func replyPhase(m transfer.Message) string {
	switch {
	case m.Type == transfer.MsgPrepared:
		return "Prp"
	case m.Type == transfer.MsgRefused && m.Re == transfer.MsgPrepare && m.Reason == transfer.ReasonVerify:
		return "Ver"
	case m.Type == transfer.MsgRefused && m.Re == transfer.MsgPrepare && m.Reason == transfer.ReasonPrepare:
		return "Prp"
	}
	return msgPhase(m.Re)
}

// stagingMoves lists the moves with a staging directory on this node.
func (n *node) stagingMoves() []string {
	ents, err := n.fs.ReadDir("staging")
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			n.w.violate("%s: read staging: %v", n.id, err)
		}
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
