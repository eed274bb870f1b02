package transfer

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentcapsule/capsule/digest"
)

// world is a tiny deterministic host for the machines: nodes with durable
// record lists, a FIFO network, and host actions that succeed unless a test
// arranged a failure. The datadriven scripts in testdata drive it.
type world struct {
	nodes map[string]*hnode
	net   []Message
	held  map[string]Message
	inv   Inventory
	out   strings.Builder
	// violations collects invariant breaks; scripts print them.
	violations []string
}

type hnode struct {
	id      string
	target  *Target
	tRecs   []Record
	source  *Source
	sRecs   []Record
	running uint64 // epoch the agent runs at here, 0 if it does not run
	down    bool
	cas     map[digest.Digest]bool
	staging map[string]bool
	fail    map[string]int // upcoming failures: "verify", "prepare", "persist", "freeze"
}

const agentID = "ag1"

func newWorld(ids []string, holder string) *world {
	w := &world{nodes: map[string]*hnode{}, held: map[string]Message{}}
	for i := 1; i <= 3; i++ {
		w.inv.Blobs = append(w.inv.Blobs, Blob{Digest: digest.FromString(fmt.Sprint("blob", i)), Size: int64(100 * i)})
	}
	w.inv.Manifest = digest.FromString("manifest")
	w.inv.Journal = JournalPos{Count: 3, Head: "e3"}
	for _, id := range ids {
		n := &hnode{id: id, target: NewTarget(agentID, id), cas: map[digest.Digest]bool{},
			staging: map[string]bool{}, fail: map[string]int{}}
		w.nodes[id] = n
	}
	h := w.nodes[holder]
	for _, b := range w.inv.Blobs {
		h.cas[b.Digest] = true
	}
	w.stepTarget(h, Input{Kind: InAdopt, Epoch: 1})
	h.running = 1
	return w
}

func (w *world) logf(format string, args ...any) {
	fmt.Fprintf(&w.out, format+"\n", args...)
}

func (w *world) flush() string {
	w.check()
	s := w.out.String()
	w.out.Reset()
	for _, v := range w.violations {
		s += "VIOLATION: " + v + "\n"
	}
	w.violations = nil
	return s
}

// check verifies the invariant after every command: at most one node runs
// the agent, and it runs at the highest epoch any node holds.
func (w *world) check() {
	var runs []string
	for _, id := range w.ids() {
		if n := w.nodes[id]; n.running > 0 {
			runs = append(runs, fmt.Sprintf("%s@%d", id, n.running))
		}
	}
	if len(runs) > 1 {
		w.violations = append(w.violations, "two runners: "+strings.Join(runs, " "))
	}
}

func (w *world) ids() []string {
	ids := make([]string, 0, len(w.nodes))
	for id := range w.nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (w *world) startMove(from, to, move string, rounds int) {
	n := w.nodes[from]
	last := uint64(0)
	if n.source != nil {
		last = n.source.State().Epoch
	}
	if err := CheckStart(n.target, n.source); err != nil {
		w.logf("%s: refuse to start: %v", from, err)
		return
	}
	src, err := NewSource(SourceConfig{Agent: agentID, Move: move, Self: from, Peer: to,
		Holder: n.target.Holder(), Epoch: NextEpoch(n.target.MaxEpoch(), last),
		Policy: Policy{MaxRounds: rounds}, Retries: 2, AbortRetries: 3})
	if err != nil {
		w.logf("%s: %v", from, err)
		return
	}
	n.source = src
	inv := w.inv
	w.stepSource(n, Input{Kind: InStart, Inventory: &inv})
}

func (w *world) stepSource(n *hnode, in Input) {
	if n.down || n.source == nil {
		return
	}
	rd := n.source.Step(in)
	if !w.persist(n, rd.Records) {
		rd = n.source.Step(Input{Kind: InPersistFailed})
		if !w.persist(n, rd.Records) {
			return
		}
	}
	w.emit(n, rd.Messages)
	if rd.Outcome != "" {
		w.logf("%s: outcome %s", n.id, rd.Outcome)
	}
	for _, a := range rd.Actions {
		w.sourceAction(n, a)
	}
}

func (w *world) stepTarget(n *hnode, in Input) {
	if n.down {
		return
	}
	rd := n.target.Step(in)
	if !w.persist(n, rd.Records) {
		n.target.Step(Input{Kind: InPersistFailed})
		return
	}
	w.emit(n, rd.Messages)
	for _, a := range rd.Actions {
		w.targetAction(n, a)
	}
}

func (w *world) persist(n *hnode, recs []Record) bool {
	if len(recs) == 0 {
		return true
	}
	if n.fail["persist"] > 0 {
		n.fail["persist"]--
		w.logf("%s: persist %s FAILED (disk full)", n.id, recs[0].Kind)
		return false
	}
	for _, r := range recs {
		w.logf("%s: persist %s", n.id, fmtRecord(r))
		if r.Source != nil {
			n.sRecs = append(n.sRecs, r)
		} else {
			n.tRecs = append(n.tRecs, r)
		}
	}
	return true
}

func (w *world) emit(n *hnode, ms []Message) {
	for _, m := range ms {
		w.logf("%s→%s %s", m.From, m.To, fmtMsg(m))
		w.net = append(w.net, m)
	}
}

func (w *world) sourceAction(n *hnode, a Action) {
	switch a.Kind {
	case ActFreeze:
		ok := n.fail["freeze"] == 0
		if !ok {
			n.fail["freeze"]--
			w.logf("%s: freeze FAILED", n.id)
			w.stepSource(n, Input{Kind: InFrozen, Problems: []string{"disk full"}})
			return
		}
		n.running = 0
		w.logf("%s: freeze agent (was running at %d)", n.id, a.Epoch)
		inv := w.inv
		w.stepSource(n, Input{Kind: InFrozen, OK: true, Inventory: &inv})
	case ActInventory:
		inv := w.inv
		w.stepSource(n, Input{Kind: InInventory, Inventory: &inv})
	case ActPush:
		for _, b := range a.Blobs {
			w.nodes[a.Peer].cas[b.Digest] = true
		}
		w.logf("%s: push %d blobs to %s (agent still running)", n.id, len(a.Blobs), a.Peer)
		w.stepSource(n, Input{Kind: InPushed, OK: true})
	case ActResume:
		if a.Epoch != n.target.Holder() {
			w.stepTarget(n, Input{Kind: InAdopt, Epoch: a.Epoch})
		}
		n.running = a.Epoch
		w.logf("%s: resume agent at epoch %d", n.id, a.Epoch)
	case ActRetire:
		n.running = 0
		w.logf("%s: retire (successor %s at epoch %d)", n.id, a.Peer, a.Epoch)
		w.stepTarget(n, Input{Kind: InRelease, Move: a.Move, Epoch: a.Epoch})
	}
}

func (w *world) targetAction(n *hnode, a Action) {
	switch a.Kind {
	case ActVerify, ActPrepare:
		what, in := "verify", InVerified
		if a.Kind == ActPrepare {
			what, in = "prepare", InPrepared
		}
		if n.fail[what] > 0 {
			n.fail[what]--
			w.logf("%s: %s %s FAILED", n.id, what, a.Move)
			w.stepTarget(n, Input{Kind: in, Problems: []string{what + " problem"}})
			return
		}
		w.logf("%s: %s %s ok", n.id, what, a.Move)
		w.stepTarget(n, Input{Kind: in, OK: true})
	case ActStart:
		delete(n.staging, a.Move)
		n.running = a.Epoch
		w.logf("%s: start agent at epoch %d", n.id, a.Epoch)
	case ActDiscard:
		delete(n.staging, a.Move)
		w.logf("%s: discard staging of %s", n.id, a.Move)
	}
}

// deliver hands the message to its receiver.
func (w *world) deliver(m Message) {
	n := w.nodes[m.To]
	if n.down {
		w.logf("%s is down: %s lost", m.To, m.Type)
		w.lost(m)
		return
	}
	if !m.Type.IsRequest() {
		w.stepSource(n, Receive(m))
		return
	}
	in := Receive(m)
	switch m.Type {
	case MsgHave, MsgOffer:
		for _, b := range m.Blobs {
			if !n.cas[b.Digest] {
				in.Missing = append(in.Missing, b.Digest)
			}
		}
	case MsgPrepare:
		for _, b := range m.Send {
			n.cas[b.Digest] = true
		}
		n.staging[m.Move] = true
	}
	w.stepTarget(n, in)
}

// lost tells the source of m that its request or reply did not make it.
func (w *world) lost(m Message) {
	src := m.From
	if !m.Type.IsRequest() {
		src = m.To
	}
	w.stepSource(w.nodes[src], Input{Kind: InSendFailed})
}

func (w *world) pop() (Message, bool) {
	if len(w.net) == 0 {
		w.logf("(network empty)")
		return Message{}, false
	}
	m := w.net[0]
	w.net = w.net[1:]
	return m, true
}

func (w *world) run(limit int) {
	for i := 0; i < limit && len(w.net) > 0; i++ {
		m, _ := w.pop()
		w.deliver(m)
	}
}

func (w *world) crash(id string) {
	n := w.nodes[id]
	n.down, n.running = true, 0
	n.target, n.source = nil, nil
	w.logf("%s: crash (volatile state lost; %d target and %d source records kept)", id, len(n.tRecs), len(n.sRecs))
}

func (w *world) restart(id string) {
	n := w.nodes[id]
	n.down = false
	t, err := RecoverTarget(n.tRecs)
	if err != nil {
		t = NewTarget(agentID, id)
	}
	n.target = t
	var rd Ready
	if len(n.sRecs) > 0 {
		src, r, err := RecoverSource(n.sRecs, SourceConfig{Retries: 2, AbortRetries: 3})
		if err == nil {
			n.source, rd = src, r
		}
	}
	w.logf("%s: restart (holder=%d max=%d)", id, t.Holder(), t.MaxEpoch())
	if w.persist(n, rd.Records) {
		w.emit(n, rd.Messages)
		if rd.Outcome != "" {
			w.logf("%s: outcome %s", n.id, rd.Outcome)
		}
		for _, a := range rd.Actions {
			w.sourceAction(n, a)
		}
	}
	if e, ok := MayRun(n.target, n.source); ok && n.running == 0 {
		n.running = e
		w.logf("%s: run agent at epoch %d (holder, no move keeps it frozen)", id, e)
	}
}

func sourcePhase(n *hnode) string {
	if n.source == nil {
		return "none"
	}
	return n.source.Phase()
}

func (w *world) state() {
	for _, id := range w.ids() {
		n := w.nodes[id]
		if n.down {
			w.logf("%s: down", id)
			continue
		}
		st := n.target.State()
		line := fmt.Sprintf("%s: max=%d holder=%d", id, st.MaxEpoch, st.Holder)
		if st.Pending != nil {
			line += fmt.Sprintf(" pending=%s@%d/%s", st.Pending.Move, st.Pending.Epoch, st.Pending.Phase)
		}
		if n.source != nil {
			line += fmt.Sprintf(" source=%s/%s", n.source.State().Move, n.source.Phase())
		}
		if len(n.staging) > 0 {
			var ks []string
			for k := range n.staging {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			line += " staging=" + strings.Join(ks, ",")
		}
		if n.running > 0 {
			line += fmt.Sprintf(" RUNNING@%d", n.running)
		}
		w.logf("%s", line)
	}
	if len(w.net) > 0 {
		var ms []string
		for _, m := range w.net {
			ms = append(ms, fmt.Sprintf("%s→%s:%s", m.From, m.To, m.Type))
		}
		w.logf("in flight: %s", strings.Join(ms, " "))
	}
}

func fmtRecord(r Record) string {
	if s := r.Source; s != nil {
		out := fmt.Sprintf("%s %s %s→%s epoch %d→%d", r.Kind, s.Move, s.Self, s.Peer, s.Holder, s.Epoch)
		if s.Note != "" {
			out += " (" + s.Note + ")"
		}
		return out
	}
	t := r.Target
	out := fmt.Sprintf("%s max=%d holder=%d", r.Kind, t.MaxEpoch, t.Holder)
	if t.Pending != nil {
		out += fmt.Sprintf(" pending=%s@%d/%s", t.Pending.Move, t.Pending.Epoch, t.Pending.Phase)
	}
	return out
}

func fmtMsg(m Message) string {
	out := fmt.Sprintf("%s %s@%d", m.Type, m.Move, m.Epoch)
	switch m.Type {
	case MsgHave, MsgOffer:
		out += fmt.Sprintf(" blobs=%d journal=%d", len(m.Blobs), m.Journal.Count)
	case MsgWant, MsgPromise:
		out += fmt.Sprintf(" want=%d have=%d", len(m.Want), m.Have.Count)
	case MsgPrepare:
		out += fmt.Sprintf(" send=%d tail=%d..%d", len(m.Send), m.JournalFrom.Count, m.Journal.Count)
	case MsgRefused:
		out += fmt.Sprintf(" re=%s reason=%s max=%d holder=%d", m.Re, m.Reason, m.MaxEpoch, m.Holder)
		if len(m.Problems) > 0 {
			out += fmt.Sprintf(" %v", m.Problems)
		}
	case MsgResolved:
		out += " " + string(m.Resolution)
	}
	return out
}

// find returns the index of the first in-flight message of type typ, or -1.
func (w *world) find(typ MsgType) int {
	return slices.IndexFunc(w.net, func(m Message) bool { return m.Type == typ })
}
