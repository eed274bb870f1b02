package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// faultKind names a fault the world can inject.
type faultKind string

const (
	faultCrashBefore faultKind = "crash-before" // crash right before a durable write
	faultCrashAfter  faultKind = "crash-after"  // crash right after a durable write
	faultNoSpace     faultKind = "enospc"       // a durable write fails
	faultDropReq     faultKind = "drop-request"
	faultDropReply   faultKind = "drop-reply"
	faultDup         faultKind = "duplicate"
	faultLate        faultKind = "late"
	faultCorrupt     faultKind = "corrupt"
	faultPrepare     faultKind = "prepare-fails" // a named secret is missing on the target
)

// mutation names a deliberately broken rule (the sim must catch it).
type mutation string

const (
	mutNone              mutation = ""
	mutResolveReads      mutation = "resolve-reads"       // Resolve answers without fencing
	mutSendBeforePersist mutation = "send-before-persist" // messages leave before records are durable
	mutNoSync            mutation = "records-not-synced"  // records are written without fsync
	// mutActivatingRuns: the rule a node runs by (transfer.MayRun) lets the
	// agent run while its source is activating (Source.Frozen broken there).
	mutActivatingRuns mutation = "activating-not-frozen"
)

// config is what a seed decides about its run.
type config struct {
	nodes     int
	steps     int // safety phase
	timeout   int // steps before a request counts as lost
	tickEvery int
	rounds    int // pre-copy rounds
	p         map[faultKind]float64
	pCrash    float64 // a node crashes at an arbitrary step
	pRestart  float64
	pCut      float64 // a link is cut or healed
	pStale    float64 // a zombie's stale request arrives
	pMove     float64
	pAppend   float64
	pBlob     float64
}

func (c config) String() string {
	var ps []string
	for _, k := range slices.Sorted(mapKeys(c.p)) {
		ps = append(ps, fmt.Sprintf("%s=%.3f", k, c.p[k]))
	}
	return fmt.Sprintf("nodes=%d steps=%d timeout=%d rounds=%d crash=%.3f cut=%.3f stale=%.3f %s",
		c.nodes, c.steps, c.timeout, c.rounds, c.pCrash, c.pCut, c.pStale, strings.Join(ps, " "))
}

// randomConfig derives a run's options from its seed.
func randomConfig(rng *rand.Rand) config {
	f := func(hi float64) float64 { return rng.Float64() * hi }
	c := config{nodes: 3 + rng.IntN(3), steps: 180 + rng.IntN(140), timeout: 4 + rng.IntN(4), tickEvery: 3,
		rounds: rng.IntN(3), pCrash: f(0.015), pRestart: 0.05 + f(0.2), pCut: f(0.02), pStale: f(0.02),
		pMove: 0.03 + f(0.1), pAppend: 0.2 + f(0.4), pBlob: f(0.1)}
	c.p = map[faultKind]float64{
		faultCrashBefore: f(0.006), faultCrashAfter: f(0.006), faultNoSpace: f(0.01),
		faultDropReq: f(0.12), faultDropReply: f(0.12), faultDup: f(0.1), faultLate: f(0.1),
		faultCorrupt: f(0.05), faultPrepare: f(0.05),
	}
	return c
}

// packet is a message in flight with what travels with it.
type packet struct {
	msg      transfer.Message
	blobs    map[digest.Digest][]byte
	tail     []event
	manifest []byte
	at       int
	from     string
}

type world struct {
	seed     uint64
	rng      *rand.Rand
	cfg      config
	now      int
	nodes    map[string]*node
	ids      []string
	net      []*packet
	cuts     map[[2]string]bool
	faultsOn bool
	plan     *plan
	mutation mutation
	// ghost is every journal event any runner made durable, in order.
	ghost []event
	// pendingEvent is an event being written (it counts once durable).
	pendingEvent *event
	pendingNode  *node
	// committed is the highest epoch made durable by a HOLDER record.
	committed  uint64
	cov        coverage
	violations []string
	traceBuf   []traceLine
	outcomes   map[transfer.Outcome]int
	moves      int
	verbose    bool
}

func newWorld(seed uint64, cfg config, mut mutation) *world {
	w := &world{seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), cfg: cfg,
		nodes: map[string]*node{}, cuts: map[[2]string]bool{}, mutation: mut, faultsOn: true,
		cov: coverage{}, outcomes: map[transfer.Outcome]int{}}
	for i := range cfg.nodes {
		id := string(rune('a' + i))
		n := &node{w: w, id: id, fs: vfs.NewMem(), up: true, target: transfer.NewTarget(agent, id)}
		w.nodes[id] = n
		w.ids = append(w.ids, id)
	}
	w.genesis(w.nodes["a"])
	return w
}

// genesis creates the agent on n at epoch 1 with a few files and events.
func (w *world) genesis(n *node) {
	faults := w.faultsOn
	w.faultsOn = false
	defer func() { w.faultsOn = faults }()
	n.execTarget(n.target.Step(transfer.Input{Kind: transfer.InAdopt, Epoch: 1}))
	n.running = 1
	for range 3 {
		n.addBlob()
		n.appendEvent()
	}
	w.committed = 1
}

func (w *world) trace(format string, args ...any) {
	t := traceLine{now: w.now, format: format, args: args}
	if w.verbose {
		fmt.Println(t)
	}
	w.traceBuf = append(w.traceBuf, t)
	if len(w.traceBuf) > 400 {
		w.traceBuf = append(w.traceBuf[:0], w.traceBuf[200:]...)
	}
}

// traceLine is formatted only when a report needs it.
type traceLine struct {
	now    int
	format string
	args   []any
}

func (t traceLine) String() string {
	return fmt.Sprintf("%4d ", t.now) + fmt.Sprintf(t.format, t.args...)
}

func (w *world) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.trace("VIOLATION: %s", msg)
	w.violations = append(w.violations, msg)
}

// fault decides whether the named fault happens at this opportunity.
func (w *world) fault(n *node, kind faultKind, label string) bool {
	if !w.faultsOn {
		return false
	}
	var hit bool
	if w.plan != nil {
		hit = w.plan.hit(kind, label)
	} else {
		p := w.cfg.p[kind]
		if strings.HasPrefix(label, "rec:") {
			p *= 4 // protocol records are rarer than journal appends; fault them more
		}
		hit = w.rng.Float64() < p
	}
	if hit {
		w.trace("%s FAULT %s %s", n.id, kind, label)
		w.coverCrash(n, kind, label)
	}
	return hit
}

func (w *world) coverCrash(n *node, kind faultKind, label string) {
	if kind != faultCrashBefore && kind != faultCrashAfter {
		return
	}
	phase := n.phaseOf(label)
	switch {
	case isSourceRecord(label):
		w.cover(coverSourceCrash, phase)
	case n.handling != "" || n.act != "":
		if kind == faultCrashBefore {
			w.cover(coverTargetBefore, phase)
		} else {
			w.cover(coverTargetAfter, phase)
		}
	case n.source != nil && !n.source.Done():
		w.cover(coverSourceCrash, phase)
	}
}

// do runs f on n, turning a planned crash into a crash of n.
func (w *world) do(n *node, f func()) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(crashSignal)
			if !ok {
				panic(r)
			}
			w.crashNode(c.n)
		}
	}()
	f()
}

func (w *world) crashNode(n *node) {
	if !n.up {
		return
	}
	if n.source != nil && !n.source.Done() && n.handling == "" && n.act == "" {
		w.cover(coverSourceCrash, n.phase())
	}
	n.fs.Crash()
	if w.pendingNode == n && w.pendingEvent != nil {
		if j := n.readJournal(fileJournal); len(j) > 0 && j[len(j)-1].ID == w.pendingEvent.ID {
			w.ghost = append(w.ghost, *w.pendingEvent)
		}
	}
	w.pendingEvent, w.pendingNode = nil, nil
	n.up, n.running, n.out = false, 0, nil
	n.target, n.source = nil, nil
	n.handling, n.act = "", ""
	n.downAt = w.now
	w.trace("%s CRASH", n.id)
}

func (w *world) cut(a, b string) bool {
	if a > b {
		a, b = b, a
	}
	return w.cuts[[2]string{a, b}]
}

func (w *world) sourceConfig() transfer.SourceConfig {
	// AbortRetries < 0: clean up for ever, so the liveness phase can demand
	// that no staging is left anywhere.
	return transfer.SourceConfig{Policy: transfer.Policy{MaxRounds: w.cfg.rounds}, Retries: 3, AbortRetries: -1}
}

// send puts a packet on the network, with the network's faults.
func (w *world) send(from *node, p *packet) {
	m := p.msg
	p.from = from.id
	req := m.Type.IsRequest()
	phase := msgPhase(m.Type)
	if !req {
		phase = replyPhase(m)
	}
	w.trace("%s→%s %s %s@%d %s", m.From, m.To, m.Type, m.Move, m.Epoch, m.Reason+transfer.Reason(m.Resolution))
	if w.cut(m.From, m.To) {
		w.cover(coverPartition, phase)
		return
	}
	if req && w.fault(from, faultDropReq, "msg:"+string(m.Type)) {
		w.cover(coverReqLost, phase)
		return
	}
	if !req && w.fault(from, faultDropReply, "msg:"+string(m.Type)) {
		w.cover(coverReplyLost, phase)
		return
	}
	if m.Type == transfer.MsgPrepare && w.fault(from, faultCorrupt, "msg:prepare") {
		w.damage(p)
	}
	p.at = w.now + 1
	if w.plan == nil {
		p.at += w.rng.IntN(3)
	}
	if w.fault(from, faultLate, "msg:"+string(m.Type)) {
		p.at = w.now + 2*w.cfg.timeout + 1
		w.cover(coverDupLate, phase)
	}
	w.net = append(w.net, p)
	if w.fault(from, faultDup, "msg:"+string(m.Type)) {
		c := *p
		c.at = w.now + w.cfg.timeout + 1
		w.net = append(w.net, &c)
		w.cover(coverDupLate, phase)
	}
}

// damage flips a bit in a blob, truncates one, or cuts the journal tail.
func (w *world) damage(p *packet) {
	keys := slices.Sorted(mapKeys(p.blobs))
	switch choice := w.rng.IntN(3); {
	case choice == 0 && len(keys) > 0:
		p.blobs[keys[0]] = corrupt(p.blobs[keys[0]])
		w.cover(coverCorrupt, "Xfr")
	case choice == 1 && len(keys) > 0:
		b := p.blobs[keys[0]]
		p.blobs[keys[0]] = b[:len(b)/2]
		w.cover(coverTruncated, "Xfr")
	default:
		if len(p.tail) > 0 {
			p.tail = p.tail[:len(p.tail)-1]
		} else {
			p.manifest = append(slices.Clone(p.manifest), ' ')
		}
		w.cover(coverTruncated, "Xfr")
	}
}

// deliver hands a packet to its receiver.
func (w *world) deliver(p *packet) {
	m := p.msg
	to := w.nodes[m.To]
	phase := msgPhase(m.Type)
	if !m.Type.IsRequest() {
		phase = replyPhase(m)
	}
	if !to.up || w.cut(p.from, to.id) {
		w.cover(coverPartition, phase)
		return
	}
	if m.Type.IsRequest() {
		w.do(to, func() { to.handleRequest(p) })
		return
	}
	if to.out.answers(m) {
		to.out = nil
	}
	w.do(to, func() { to.stepSource(transfer.Receive(m)) })
}

// ready returns the indexes of packets that may be delivered now.
func (w *world) ready() []int {
	var idx []int
	for i, p := range w.net {
		if p.at <= w.now {
			idx = append(idx, i)
		}
	}
	return idx
}

func (w *world) take(i int) *packet {
	p := w.net[i]
	w.net = slices.Delete(w.net, i, i+1)
	return p
}

// timeouts turn an unanswered request into InSendFailed.
func (w *world) timeouts() {
	for _, id := range w.ids {
		n := w.nodes[id]
		if n.up && n.out != nil && w.now >= n.out.deadline {
			n.out = nil
			w.do(n, func() { n.stepSource(transfer.Input{Kind: transfer.InSendFailed}) })
		}
	}
}

func (w *world) ticks() {
	if w.now%w.cfg.tickEvery != 0 {
		return
	}
	for _, id := range w.ids {
		n := w.nodes[id]
		if n.up && n.source != nil && !n.source.Done() && n.out == nil {
			w.do(n, func() { n.stepSource(transfer.Input{Kind: transfer.InTick}) })
		}
	}
}

// runner returns the node that runs the agent, or nil.
func (w *world) runner() *node {
	for _, id := range w.ids {
		if n := w.nodes[id]; n.up && n.running > 0 {
			return n
		}
	}
	return nil
}

func (w *world) runStep(n *node) {
	if w.rng.Float64() < w.cfg.pBlob {
		w.do(n, n.addBlob)
	}
	if !n.up || n.running == 0 {
		return
	}
	w.do(n, func() {
		e := newEvent(n.journal, n.running, n.id)
		w.pendingEvent, w.pendingNode = &e, n
		n.appendEvent()
		w.pendingEvent, w.pendingNode = nil, nil
	})
}

// startMove starts a move from the runner to a random other node, and
// checks that a second move is refused while one is unresolved.
func (w *world) startMove(n *node, to string) {
	err := transfer.CheckStart(n.target, n.source)
	busy := n.source != nil && (!n.source.Done() || n.source.Frozen()) && n.source.State().Holder >= n.target.Holder()
	if busy {
		if err == nil {
			w.violate("%s: a second move was allowed while %s is %s", n.id, n.source.State().Move, n.source.Phase())
		}
		w.cover(coverConcurrent, sourcePhase(n.source.Phase()))
		return
	}
	if err != nil {
		return
	}
	last := uint64(0)
	if n.source != nil {
		last = n.source.State().Epoch
	}
	w.moves++
	cfg := w.sourceConfig()
	cfg.Agent, cfg.Move, cfg.Self, cfg.Peer = agent, fmt.Sprintf("m%d", w.moves), n.id, to
	cfg.Holder, cfg.Epoch = n.target.Holder(), transfer.NextEpoch(n.target.MaxEpoch(), last)
	src, err := transfer.NewSource(cfg)
	if err != nil {
		w.violate("new source: %v", err)
		return
	}
	n.source = src
	inv := n.inventory()
	w.trace("%s starts move %s to %s at epoch %d", n.id, cfg.Move, to, cfg.Epoch)
	w.do(n, func() { n.stepSource(transfer.Input{Kind: transfer.InStart, Inventory: &inv}) })
}

// injectStale delivers a zombie's request with an epoch the target has
// already seen. It must be refused without any change of state.
func (w *world) injectStale() {
	t := w.nodes[w.ids[w.rng.IntN(len(w.ids))]]
	if !t.up || t.target.MaxEpoch() == 0 {
		return
	}
	types := []transfer.MsgType{transfer.MsgOffer, transfer.MsgActivate, transfer.MsgResolve, transfer.MsgAbort}
	typ := types[w.rng.IntN(len(types))]
	w.moves++
	z := w.ids[w.rng.IntN(len(w.ids))]
	m := transfer.Message{Type: typ, Agent: agent, Move: fmt.Sprintf("zombie%d", w.moves),
		Epoch: 1 + w.rng.Uint64N(t.target.MaxEpoch()), From: z, To: t.id}
	if z == t.id {
		return
	}
	before := t.target.State()
	if pd := before.Pending; pd != nil && typ == transfer.MsgOffer {
		w.cover(coverConcurrent, map[transfer.TargetPhase]string{transfer.PhasePromised: "Off", transfer.PhasePrepared: "Prp"}[pd.Phase])
	}
	rd := t.target.Step(transfer.Input{Kind: transfer.InMessage, Msg: &m})
	after := t.target.State()
	if len(rd.Records) > 0 || len(rd.Actions) > 0 || after.MaxEpoch != before.MaxEpoch || after.Holder != before.Holder {
		w.violate("%s: a stale %s at epoch %d changed the state", t.id, typ, m.Epoch)
	}
	if len(rd.Messages) != 1 {
		w.violate("%s: a stale %s got %d replies", t.id, typ, len(rd.Messages))
		return
	}
	r := rd.Messages[0]
	switch {
	case typ == transfer.MsgOffer && r.Type == transfer.MsgRefused:
		w.cover(coverStale, "Off")
	case typ == transfer.MsgActivate && r.Type == transfer.MsgRefused:
		w.cover(coverStale, "Act")
	case typ == transfer.MsgResolve && r.Resolution == transfer.ResolvedUnknown:
		w.cover(coverStale, "Res")
	case typ == transfer.MsgAbort && r.Type == transfer.MsgAborted:
	default:
		w.violate("%s: a stale %s at epoch %d was answered %s", t.id, typ, m.Epoch, r.Type)
	}
}

// coverRefusal counts real late requests a target refused.
func (n *node) coverRefusal(m transfer.Message, before transfer.TargetState) {
	if m.Type != transfer.MsgActivate || n.target == nil {
		return
	}
	for _, h := range n.target.State().History {
		if h.Move == m.Move && h.Result == transfer.ResolvedAborted {
			n.w.cover(coverStale, "Act")
		}
	}
}
