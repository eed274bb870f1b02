package e2e

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

var (
	flagWorkload = flag.String("e2e.workload", "counter", "what TestChaosRing runs: counter (the built-in runner) or agent (an LLM agent on capsule model serve)")
	// The default stays under minAimedRounds: five rounds are too few for
	// every aimed phase to be hit each run (TestChaosRing checks the aim).
	flagAgentRounds = flag.Int("e2e.agent-rounds", 5, "moves with faults in TestChaosRingAgent (its default run is short; -e2e.workload=agent runs -e2e.rounds)")
)

// TestChaosRingAgent is the chaos test of three nodes (TestChaosRing) with
// an LLM agent instead of the counter: the agent loop on the simulator
// run by `capsule model serve`, given a new task whenever it is idle and
// switched between two providers' APIs every few tasks, while the
// seeded faults kill nodes and cut links in the middle of moves. Beside
// TestChaosRing's invariants (one holder at a time, the journals of all
// nodes verify and agree, agreement and liveness once the faults stop) it
// checks that the simulator refused no request and that no event, step
// or tool result is doubled. A few rounds by default; a soak with
//
//	go test ./e2e -run TestChaosRing -e2e.workload=agent -e2e.rounds=100 -timeout 60m
func TestChaosRingAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real node processes; skipped with -short")
	}
	runAgentChaos(t, *flagAgentRounds)
}

// runAgentChaos is TestChaosRing's run with the agent workload.
func runAgentChaos(t *testing.T, rounds int) {
	seed := chaosSeed(t)
	t.Logf("seed %d, %d rounds, LLM agent; replay the fault schedule with:\n  go test ./e2e -run TestChaosRing -v -e2e.workload=agent -e2e.seed=%d -e2e.rounds=%d", seed, rounds, seed, rounds)
	start := time.Now()
	s := startSim(t)
	c := newClusterArgs(t, 3, []string{"--model-endpoint", s.url})
	agent := c.createLLMAgent(c.procs[0], smallWorkspace(t), claudePlanner, "Please read_file path=src/main.go.")
	c.waitAnswers(c.procs[0], agent, 1)
	mon := c.monitor(agent)
	t.Cleanup(func() {
		mon.stop()
		if v := mon.violations(); len(v) > 0 {
			t.Errorf("two runners of the agent:\n  %s", strings.Join(v, "\n  "))
		}
	})
	f := c.feed(agent)
	holder := c.chaosRounds(agent, planRounds(seed, rounds), c.settle(agent))
	c.heal()
	for _, p := range c.procs {
		c.restart(p)
	}
	f.stop()
	t.Logf("feeder: %s", f)
	holder = c.settle(agent)
	c.checkAgreement(agent, holder)
	holder = c.checkAgentLiveness(agent, holder)

	mon.stop()
	for _, p := range c.procs {
		if err := c.stop(p, 20*time.Second); err != nil {
			t.Error(err)
		}
	}
	c.checkJournalsOnDisk(agent)
	log := s.requests(t)
	for _, r := range refused(log) {
		t.Errorf("the simulator refused a request: %s", r)
	}
	events := c.mergedEvents(agent)
	for _, p := range duplicates(events) {
		t.Errorf("duplicated: %s", p)
	}
	for _, p := range workspaceProblems(events, workDir(c.procs[holder], agent)) {
		t.Errorf("workspace: %s", p)
	}
	t.Logf("agent: %d model requests (%d cut by a kill while sent), %d tool results, %d answers; done in %v", len(log), tornCount(log),
		countKind(events, journal.KindToolResult), countKind(events, journal.KindAssistant), time.Since(start).Round(time.Millisecond))
}

// checkAgentLiveness makes a move without faults, which must commit,
// gives the agent a task on the new holder, which it must answer there,
// and checks that no other copy of the journal changed meanwhile. It
// returns the new holder.
func (c *cluster) checkAgentLiveness(agent string, holder int) int {
	c.t.Helper()
	next := (holder + 1) % len(c.procs)
	c.finalMove(agent, holder, next)
	if got := c.settle(agent); got != next {
		c.t.Fatalf("after the final move the holder is %s, want %s", c.procs[got].name, c.procs[next].name)
	}
	p := c.procs[next]
	answers := countKind(c.waitAnswers(p, agent, 0), journal.KindAssistant)
	before := c.journalSizes(agent)
	c.say(p, agent, "Please write_file path=final.txt content=liveness, then read_file.")
	c.waitAnswers(p, agent, answers+1)
	after := c.journalSizes(agent)
	live := journalPaths(p.dir, agent)[0]
	for path, n := range after {
		if path != live && n != before[path] {
			c.t.Errorf("journal copy %s changed while %s holds the agent: %d -> %d events", path, p.name, before[path], n)
		}
	}
	c.t.Logf("liveness: %s answered a task after the final move (%d -> %d events)", p.name, before[live], after[live])
	return next
}

// finalMove moves the agent without faults; it must commit. A move that
// does not is tried twice more, to tell in the failure whether it fails
// every time.
func (c *cluster) finalMove(agent string, from, to int) {
	c.t.Helper()
	var tries []string
	for try := 0; try < 3; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		res, err := c.move(ctx, c.procs[from], agent, c.procs[to])
		cancel()
		if err == nil && res.Outcome == api.OutcomeCommitted {
			if try > 0 {
				c.t.Errorf("final move %s -> %s without faults did not commit at once:\n  %s", c.procs[from].name, c.procs[to].name, strings.Join(tries, "\n  "))
			}
			return
		}
		tries = append(tries, fmt.Sprintf("%s %s (%v)", res.Outcome, res.Reason, err))
		c.settle(agent)
	}
	c.t.Fatalf("final move %s -> %s without faults, 3 tries:\n  %s\n%s", c.procs[from].name, c.procs[to].name, strings.Join(tries, "\n  "), c.describe(c.views(agent)))
}

// feeder gives the agent a new task whenever a node reports it running
// and idle, and switches its model every third task.
type feeder struct {
	done chan struct{}
	wg   sync.WaitGroup

	mu                    sync.Mutex
	sent, refused, models int
}

func (c *cluster) feed(agent string) *feeder {
	f := &feeder{done: make(chan struct{})}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for turn := 1; ; {
			select {
			case <-f.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if c.feedOnce(f, agent, turn) {
				turn++
			}
		}
	}()
	return f
}

// feedOnce sends task turn to the node that runs the agent idle, if any.
func (c *cluster) feedOnce(f *feeder, agent string, turn int) bool {
	for i, v := range c.views(agent) {
		if !v.up || v.err != nil || v.st.State != api.StateRunning || v.st.Activity != "idle" {
			continue
		}
		p := c.procs[i]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if turn%3 == 0 {
			m := []simModel{claudePlanner, responsesPlanner}[turn/3%2]
			if _, err := c.cli(ctx, "agent", "model", agent, "--provider", m.provider, "--api", m.api, "--model", m.model, "--data", p.dir); err == nil {
				f.count(&f.models)
			}
		}
		task := fmt.Sprintf("Please write_file path=notes/t%d.txt content=task%d, then search pattern=task%d.", turn, turn, turn)
		if _, err := c.cli(ctx, "agent", "say", agent, task, "--data", p.dir); err != nil {
			f.count(&f.refused) // the node froze or lost the agent meanwhile
			return false
		}
		f.count(&f.sent)
		return true
	}
	return false
}

func (f *feeder) count(n *int) {
	f.mu.Lock()
	*n++
	f.mu.Unlock()
}

func (f *feeder) stop() {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
	f.wg.Wait()
}

func (f *feeder) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%d tasks sent, %d refused (frozen or moved), %d model switches", f.sent, f.refused, f.models)
}
