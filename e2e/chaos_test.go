package e2e

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
)

// TestChaosRing moves one agent round a ring of three real node processes,
// each reaching the others through its own fault proxy, while a seeded
// schedule kills processes with SIGKILL (restarting them on the same data
// folder), cuts, partitions, blackholes, slows and truncates their
// connections, loses their replies, and has an operator start the agent on
// the source mid-move. It then checks, from the outside:
//
//   - safety, all along: no two nodes ever report running the agent under
//     the same epoch, no node reports running it under an epoch older than
//     one another node was already seen running it under (an old holder
//     still running beside the new one), and no node's runner takes steps
//     while it reports the agent frozen or retired (polled every 50 ms);
//   - safety, on disk: the journals of all nodes, merged, verify, have no
//     fork, and show no two machines writing under the same epoch and no
//     machine going back to an older epoch (docs/PROTOCOL.md, the
//     invariant "at most one machine runs the agent, ever");
//   - agreement: once the faults stop (and an operator `capsule move
//     resolve` settled any move left waiting), exactly one node runs the
//     agent and every node's view leads to it;
//   - liveness: a last move without faults commits, and afterwards the
//     agent's journal grows on the new holder and nowhere else;
//   - aim: the faults began where they were aimed (during pre-copy, between
//     offer and activate, right after activate is sent), at least one in
//     each, and most of them inside the move (checkAim).
//
// With -e2e.workload=agent it runs an LLM agent instead of the counter
// (runAgentChaos, TestChaosRingAgent).
//
// The seed comes from -e2e.seed, else from $CAPSULE_E2E_SEED (.ci/run sets
// one per run and prints it), else from the clock; it is printed with the
// command that replays the schedule.
func TestChaosRing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real node processes; skipped with -short")
	}
	switch *flagWorkload {
	case "agent": // an LLM agent instead of the counter (agent_chaos_test.go)
		runAgentChaos(t, *flagRounds)
		return
	case "counter":
	default:
		t.Fatalf("-e2e.workload=%q: want counter or agent", *flagWorkload)
	}
	seed := chaosSeed(t)
	rounds := *flagRounds
	t.Logf("seed %d, %d rounds; replay the fault schedule with:\n  go test ./e2e -run TestChaosRing -v -e2e.seed=%d -e2e.rounds=%d\n(the schedule replays exactly; process timing does not)", seed, rounds, seed, rounds)
	start := time.Now()
	c := newCluster(t, 3)
	agent := c.createAgent(c.procs[0], makeWorkspace(t))
	mon := c.monitor(agent)
	t.Cleanup(func() {
		mon.stop()
		if v := mon.violations(); len(v) > 0 {
			t.Errorf("two runners of the agent:\n  %s", strings.Join(v, "\n  "))
		}
	})
	t.Logf("agent %s created on n1; nodes %s", agent, c.names())
	holder := c.chaosRounds(agent, planRounds(seed, rounds), c.settle(agent))

	// The faults stop: every link healed, every node up.
	c.heal()
	for _, p := range c.procs {
		c.restart(p)
	}
	holder = c.settle(agent)
	c.checkAgreement(agent, holder)
	c.checkLiveness(agent, holder)

	mon.stop()
	for _, p := range c.procs {
		if err := c.stop(p, 20*time.Second); err != nil {
			t.Error(err)
		}
	}
	c.checkJournalsOnDisk(agent)
	t.Logf("done in %v", time.Since(start).Round(time.Millisecond))
}

// chaosRounds runs one move with faults per round, from the holder to the
// next node of the ring, settling the cluster after each, checks where the
// faults began, and returns the holder at the end.
func (c *cluster) chaosRounds(agent string, plan []round, holder int) int {
	t := c.t
	tally := map[string]int{}
	cov := newCoverage()
	for i, r := range plan {
		src, tgt := holder, (holder+1)%len(c.procs)
		began := time.Now()
		outcome, tr, lands := c.chaosMove(agent, src, tgt, r)
		tally[outcome]++
		var where []string
		for j, f := range r {
			cov.add(f, lands[j])
			where = append(where, string(lands[j]))
		}
		t.Logf("round %2d: %s -> %s with %s: %s after %v", i+1, c.procs[src].name, c.procs[tgt].name, r, outcome, tr.took().Round(time.Millisecond))
		t.Logf("          phases %s; faults began in %s", tr.phases(), strings.Join(where, ", "))
		holder = c.settle(agent)
		t.Logf("          settled after %v; holder %s", time.Since(began).Round(time.Millisecond), c.procs[holder].name)
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("outcomes: %v", tally)
	t.Logf("where the faults began:%s", cov)
	checkAim(t, cov, len(plan))
	return holder
}

// Aim thresholds: with at least minAimedRounds rounds, every phase of aims
// must get a fault that began in it, and at least minInside of the aimed
// faults must begin inside the move (before it answered). Fewer rounds
// only log the coverage.
const (
	minAimedRounds = 6
	minInside      = 0.6
)

// checkAim fails the test when the faults missed what they aimed at.
func checkAim(t *testing.T, cov *coverage, rounds int) {
	t.Helper()
	if rounds < minAimedRounds {
		t.Logf("aim not checked: %d rounds, fewer than %d", rounds, minAimedRounds)
		return
	}
	for _, p := range aimProblems(cov) {
		t.Error(p)
	}
}

// aimProblems lists how the faults missed their aims: a phase no fault
// began in, or too few aimed faults inside the move.
func aimProblems(cov *coverage) []string {
	var out []string
	for _, a := range aims {
		if cov.hits(a) == 0 {
			out = append(out, fmt.Sprintf("none of the %d faults aimed at %s began there", cov.drawn[a], a))
		}
	}
	in, all := cov.inside(aims...)
	if float64(in) < minInside*float64(all) {
		out = append(out, fmt.Sprintf("only %d of %d aimed faults began inside the move, want at least %.0f%%", in, all, 100*minInside))
	}
	return out
}

// chaosSeed returns the seed of the fault schedule: -e2e.seed, else
// $CAPSULE_E2E_SEED, else one from the clock.
func chaosSeed(t *testing.T) int64 {
	if *flagSeed != 0 {
		return *flagSeed
	}
	if s := os.Getenv("CAPSULE_E2E_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n == 0 {
			t.Fatalf("CAPSULE_E2E_SEED=%q: want a non-zero integer", s)
		}
		return n
	}
	return time.Now().UnixNano()
}

// checkLiveness makes a move without faults, which must commit, and checks
// that afterwards only the new holder's journal grows.
func (c *cluster) checkLiveness(agent string, holder int) {
	c.t.Helper()
	next := (holder + 1) % len(c.procs)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	res, err := c.move(ctx, c.procs[holder], agent, c.procs[next])
	cancel()
	if err != nil || res.Outcome != api.OutcomeCommitted {
		c.t.Fatalf("final move %s -> %s without faults: %+v, %v\n%s", c.procs[holder].name, c.procs[next].name, res, err, c.describe(c.views(agent)))
	}
	if got := c.settle(agent); got != next {
		c.t.Fatalf("after the final move the holder is %s, want %s", c.procs[got].name, c.procs[next].name)
	}
	c.checkOnlyHolderGrows(agent, next)
}

// makeWorkspace writes a small workspace: a few files of random bytes in
// two folders.
func makeWorkspace(t *testing.T) string {
	dir := t.TempDir()
	for i := 0; i < 12; i++ {
		sub := dir
		if i%3 == 0 {
			sub = filepath.Join(dir, "data")
		}
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4<<10<<(i%4))
		_, _ = rand.Read(b)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%02d.bin", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func (c *cluster) names() string {
	var parts []string
	for _, p := range c.procs {
		parts = append(parts, fmt.Sprintf("%s=%s@%s", p.name, p.id, p.listen))
	}
	return strings.Join(parts, " ")
}

// chaosMove moves the agent from src to tgt over the source's local API,
// following the move's phases on its progress stream while the round's
// faults happen, each aimed at a phase; it waits for the faults to be over
// and every node to be up again, and returns a short word for what the
// move reported, the move's tracker and where each fault began.
func (c *cluster) chaosMove(agent string, src, tgt int, r round) (string, *tracker, []landing) {
	tr := newTracker()
	wait := c.inject(r, src, tgt, tr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tr.begin()
	var res api.MoveResult
	var err error
	for wait := 0; ; wait++ {
		res, err = c.procs[src].client().Move(ctx, agent, api.MoveRequest{To: c.procs[tgt].id}, func(p api.MoveProgress) { tr.saw(p.Phase) })
		// A source restarted after a kill may still be sending the abort
		// of its last move, and refuses a new one until it is answered:
		// ask again, so that the aimed faults meet a move.
		if !errors.Is(err, api.ErrConflict) || wait == 30 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	tr.end(res.Outcome)
	cancel()
	lands := wait()
	c.heal()
	for _, p := range c.procs {
		c.restart(p)
	}
	switch {
	case err != nil:
		return "no result (" + firstLine(err.Error()) + ")", tr, lands
	case res.Outcome == "":
		return "no result", tr, lands
	}
	return res.Outcome, tr, lands
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

// settle waits until the cluster is quiet: every node up and answering,
// exactly one running the agent, none frozen or blocked, and every move
// known to a node finished, a rolled-back one included only once its
// abort is answered (until then its source refuses a new move, PROTOCOL
// §9.2). A move left waiting (its activate unanswered)
// gets the operator's `capsule move resolve`. It returns the holder.
func (c *cluster) settle(agent string) int {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	lastResolve := map[int]time.Time{}
	frozenSince := map[int]time.Time{}
	var vs []view
	for time.Now().Before(deadline) {
		for _, p := range c.procs {
			if !p.running() {
				c.t.Fatalf("%s exited on its own (every fault is over):\n%s", p.name, tail(p.log, 60))
			}
		}
		vs = c.views(agent)
		if h, ok := quiet(vs); ok {
			return h
		}
		for i, v := range vs {
			if !v.up || v.err != nil || !stuck(v) {
				delete(frozenSince, i)
				continue
			}
			if frozenSince[i].IsZero() {
				frozenSince[i] = time.Now()
			}
			if time.Since(frozenSince[i]) > time.Second && time.Since(lastResolve[i]) > 2*time.Second {
				lastResolve[i] = time.Now()
				c.operatorResolve(agent, i)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("the cluster did not settle within 30 s:\n%s", c.describe(vs))
	return -1
}

// operatorResolve runs `capsule move resolve` on node i, as an operator
// would for a move that waits.
func (c *cluster) operatorResolve(agent string, i int) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := c.resolve(ctx, c.procs[i], agent)
	if err != nil {
		c.t.Logf("operator: capsule move resolve on %s: %v", c.procs[i].name, firstLine(err.Error()))
		return
	}
	c.t.Logf("operator: capsule move resolve on %s: move %s to %s phase %s outcome %q %s", c.procs[i].name, st.MoveID, c.nameOf(st.To), st.Phase, st.Outcome, st.Reason)
}

// stuck reports whether a node holds the agent frozen by a move that has
// not finished (or waits for its resolution).
func stuck(v view) bool {
	return v.st.State == api.StateFrozen || v.st.Move != nil && v.st.Move.Outcome == api.OutcomeWaiting
}

// quiet reports whether the views show a settled cluster, and its holder.
func quiet(vs []view) (int, bool) {
	holder := -1
	for i, v := range vs {
		if !v.up {
			return -1, false
		}
		if errors.Is(v.err, api.ErrNotFound) {
			continue // a node that never heard of the agent
		}
		if v.err != nil {
			return -1, false
		}
		switch v.st.State {
		case api.StateRunning:
			if holder >= 0 {
				return -1, false
			}
			holder = i
		case api.StateFrozen, api.StateBlocked:
			return -1, false
		}
		if m := v.st.Move; m != nil && (m.Outcome != api.OutcomeCommitted && m.Outcome != api.OutcomeRolledBack || m.Phase == api.PhaseAborting) {
			return -1, false // unfinished, or rolled back with its abort not yet answered
		}
	}
	return holder, holder >= 0
}

// checkAgreement checks that every node's view of the holder leads to the
// one node running the agent. A node names itself while it holds the
// agent and its successor once it moved it away; following successors
// from any node must end at the holder.
func (c *cluster) checkAgreement(agent string, holder int) {
	c.t.Helper()
	vs := c.views(agent)
	direct := 0
	for i, v := range vs {
		if errors.Is(v.err, api.ErrNotFound) || v.err == nil && (v.st.State == api.StateRetired || v.st.State == api.StateIncoming) && v.st.Holder == "" {
			c.t.Logf("%s never held the agent: no view of the holder", c.procs[i].name)
			continue
		}
		if v.err != nil {
			c.t.Errorf("%s: %v", c.procs[i].name, v.err)
			continue
		}
		if c.index(v.st.Holder) == holder {
			direct++
		}
		if got := c.follow(vs, i); got != holder {
			c.t.Errorf("%s's view of the holder leads to %s, want %s\n%s", c.procs[i].name, c.nameOrNone(got), c.procs[holder].name, c.describe(vs))
		}
	}
	c.t.Logf("agreement: all %d nodes lead to %s; %d name it directly\n%s", len(vs), c.procs[holder].name, direct, c.describe(vs))
}

func (c *cluster) nameOrNone(i int) string {
	if i < 0 {
		return "nowhere"
	}
	return c.procs[i].name
}

// follow walks from node i to the node it names as holder, until a node
// that holds the agent itself; -1 if the walk leads nowhere.
func (c *cluster) follow(vs []view, i int) int {
	for hops := 0; hops <= len(vs); hops++ {
		v := vs[i]
		if v.err != nil {
			return -1
		}
		if v.st.State == api.StateRunning || v.st.State == api.StateStopped {
			return i
		}
		next := c.index(v.st.Holder)
		if next < 0 || next == i {
			return -1
		}
		i = next
	}
	return -1
}

// checkOnlyHolderGrows looks at every journal copy on every node twice,
// a second apart: the holder's live journal must grow, no other copy may.
func (c *cluster) checkOnlyHolderGrows(agent string, holder int) {
	c.t.Helper()
	before := c.journalSizes(agent)
	time.Sleep(time.Second)
	after := c.journalSizes(agent)
	live := journalPaths(c.procs[holder].dir, agent)[0]
	if after[live] <= before[live] {
		c.t.Errorf("the holder %s's journal did not grow in a second: %d -> %d events", c.procs[holder].name, before[live], after[live])
	}
	var paths []string
	for p := range after {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if p != live && after[p] != before[p] {
			c.t.Errorf("journal copy %s changed while %s holds the agent: %d -> %d events", p, c.procs[holder].name, before[p], after[p])
		}
	}
	c.t.Logf("liveness: %s's journal grew %d -> %d events in a second; %d other copies unchanged", c.procs[holder].name, before[live], after[live], len(paths)-1)
}

// journalSizes counts the complete events of every journal copy on disk.
func (c *cluster) journalSizes(agent string) map[string]int {
	out := map[string]int{}
	for _, p := range c.procs {
		for _, path := range journalPaths(p.dir, agent) {
			events, err := readJournalFile(path)
			if err != nil {
				c.t.Errorf("%s: %v", p.name, err)
				continue
			}
			if events != nil {
				out[path] = len(events)
			}
		}
	}
	return out
}

// checkJournalsOnDisk reads every copy of the agent's journal from the
// stopped nodes' folders and checks them together.
func (c *cluster) checkJournalsOnDisk(agent string) {
	c.t.Helper()
	c.journalsChecked = true
	dirs := map[string]string{}
	for _, p := range c.procs {
		dirs[p.name] = p.dir
	}
	copies, err := collectJournals(dirs, agent)
	if err != nil {
		c.t.Fatal(err)
	}
	rep := checkJournals(copies)
	var epochs []uint64
	for e := range rep.Writers {
		epochs = append(epochs, e)
	}
	sort.Slice(epochs, func(i, j int) bool { return epochs[i] < epochs[j] })
	var parts []string
	for _, e := range epochs {
		var ws []string
		for _, m := range rep.Writers[e] {
			ws = append(ws, c.nameOf(m))
		}
		parts = append(parts, fmt.Sprintf("%d:%s", e, strings.Join(ws, "+")))
	}
	c.t.Logf("journals: %d copies, %d distinct events; epoch:writer %s", len(copies), rep.Events, strings.Join(parts, " "))
	for _, p := range rep.Problems {
		c.t.Errorf("journal invariant: %s", p)
	}
}

// monitor polls every node every 50 ms and records every sign of two
// runners:
//
//   - two nodes report running the agent under the same epoch;
//   - a node reports running it under an epoch below one that another (or
//     the same) node was seen running it under, in an answer received
//     before this question was asked: the old holder still runs beside the
//     new one (or came back). Asking after the other answer arrived rules
//     out a mere skew between two samples of one poll;
//   - a node's runner takes steps between two polls while the node
//     reports the agent frozen or retired in both (same process, polls less
//     than stepWindow apart): it says it stopped but its runner goes on.
type monitor struct {
	mu    sync.Mutex
	found []string
	seen  map[string]bool // what was reported, once per kind, node and epochs
	// ran holds, per epoch, the first answer that reported the agent
	// running under it.
	ran  map[uint64]sighting
	last []view // the previous poll
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// sighting is one node reporting the agent running.
type sighting struct {
	node     string
	answered time.Time
}

// stepWindow bounds the time between two polls for the steps check: a
// frozen agent may resume (rollback) and freeze again for the next move,
// but not this fast.
const stepWindow = 400 * time.Millisecond

func (c *cluster) monitor(agent string) *monitor {
	m := &monitor{done: make(chan struct{}), ran: map[uint64]sighting{}}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			select {
			case <-m.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			m.check(c, c.views(agent))
		}
	}()
	return m
}

func (m *monitor) check(c *cluster, vs []view) {
	m.mu.Lock()
	defer m.mu.Unlock()
	byEpoch := map[uint64][]string{}
	for i, v := range vs {
		if !v.up || v.err != nil {
			continue
		}
		name := c.procs[i].name
		if v.st.State == api.StateRunning {
			byEpoch[v.st.Epoch] = append(byEpoch[v.st.Epoch], name)
			m.checkOlder(name, v)
		}
		if m.last != nil {
			m.checkSteps(name, m.last[i], v)
		}
	}
	for e, names := range byEpoch {
		if len(names) > 1 {
			m.report(fmt.Sprint("same", names, e), "%s run the agent at epoch %d", strings.Join(names, " and "), e)
		}
	}
	for i, v := range vs {
		if v.up && v.err == nil && v.st.State == api.StateRunning {
			if s, ok := m.ran[v.st.Epoch]; !ok || v.answered.Before(s.answered) {
				m.ran[v.st.Epoch] = sighting{node: c.procs[i].name, answered: v.answered}
			}
		}
	}
	m.last = vs
}

// checkOlder reports node running at an epoch below one seen running
// before v was asked.
func (m *monitor) checkOlder(node string, v view) {
	for e, s := range m.ran {
		if e > v.st.Epoch && s.answered.Before(v.asked) {
			m.report(fmt.Sprint("older", node, v.st.Epoch, s.node, e), "%s runs the agent at epoch %d (asked %s) after %s ran it at epoch %d (answered %s)",
				node, v.st.Epoch, v.asked.Format(time.StampMilli), s.node, e, s.answered.Format(time.StampMilli))
		}
	}
}

// checkSteps reports a runner that stepped while its node said the agent
// was frozen or retired.
func (m *monitor) checkSteps(node string, prev, v view) {
	stopped := func(w view) bool {
		return w.up && w.err == nil && (w.st.State == api.StateFrozen || w.st.State == api.StateRetired)
	}
	if !stopped(prev) || !stopped(v) || prev.start != v.start || v.asked.Sub(prev.answered) > stepWindow {
		return
	}
	if v.st.Steps > prev.st.Steps {
		m.report(fmt.Sprint("steps", node, v.st.State, v.st.Epoch), "%s took %d steps while it reported the agent %s then %s", node, v.st.Steps-prev.st.Steps, prev.st.State, v.st.State)
	}
}

// report records a sign of two runners the first time its key is seen (a
// second runner is seen again at every poll until it stops).
func (m *monitor) report(key, format string, args ...any) {
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	if m.seen[key] {
		return
	}
	m.seen[key] = true
	m.found = append(m.found, fmt.Sprintf(format, args...)+" ("+time.Now().Format(time.StampMilli)+")")
}

func (m *monitor) stop() {
	m.once.Do(func() { close(m.done) })
	m.wg.Wait()
}

func (m *monitor) violations() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.found...)
}
