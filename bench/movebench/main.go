// Command movebench measures moves of a large agent between two real
// `capsule node` processes on loopback, against rsync on the same data in
// the same run (bench/move.sh runs it):
//
//  1. first move of an agent with a workspace of FILES x SIZE bytes and
//     EVENTS journal events: bytes on the wire (counted by a TCP proxy
//     between the nodes, TLS included) against the capsule's size, and the
//     move's total time against `rsync -a` of the capsule folder to an
//     rsync daemon on loopback;
//
//  2. a move back after PCT % of the workspace files were rewritten: bytes
//     on the wire against the changed blobs plus the journal tail, and
//     against `rsync -a --stats` for the same change;
//
//  3. the same with only a few KiB rewritten inside each of those files
//     (rsync's rolling checksum against whole-file blobs);
//
//  4. the frozen window (freeze to running on the target) of MOVES moves,
//     each with HOT bytes of the workspace changed after pre-copy began,
//     with the node's frozen_ms and round trips and where the time went
//     (phase changes as the progress stream reports them).
//
//     go run ./bench/movebench -capsule /tmp/capsule -dir /var/tmp/mb
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agentcapsule/capsule/api"
)

type config struct {
	bin, dir      string
	files, size   int
	events, moves int
	hot, part     int
	pct           float64
	seed          uint64
	withSync      bool
	inprocess     bool
	cpuprofile    string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.bin, "capsule", "", "the capsule binary (required)")
	flag.StringVar(&cfg.dir, "dir", "", "an empty working folder on the disk to measure (required)")
	flag.IntVar(&cfg.files, "files", 1024, "workspace files")
	flag.IntVar(&cfg.size, "size", 1<<20, "bytes per workspace file")
	flag.IntVar(&cfg.events, "events", 10000, "journal events to add before the first move")
	flag.IntVar(&cfg.moves, "moves", 5, "moves measured for the frozen window")
	flag.IntVar(&cfg.hot, "hot", 1<<20, "bytes changed after pre-copy began, in each frozen-window move")
	flag.IntVar(&cfg.part, "part", 4096, "bytes rewritten inside each changed file in the partial-change move")
	flag.Float64Var(&cfg.pct, "pct", 1, "percent of the workspace files changed before the move back")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the content")
	flag.BoolVar(&cfg.withSync, "rsync-fsync", true, "also time rsync -a --fsync (capsule fsyncs what it writes)")
	flag.BoolVar(&cfg.inprocess, "inprocess", false, "run both nodes in this process with debug logs, and print where each frozen window's time went")
	flag.StringVar(&cfg.cpuprofile, "cpuprofile", "", "with -inprocess: write a CPU profile of the frozen-window moves here")
	flag.Parse()
	if cfg.bin == "" || cfg.dir == "" {
		fmt.Fprintln(os.Stderr, "movebench: -capsule and -dir are required")
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "movebench:", err)
		os.Exit(1)
	}
}

// bench is the state of one run.
type bench struct {
	cfg   config
	pr    *pair
	rs    *rsyncd
	c     *content
	agent string
	// capsuleBytes is the size of the capsule folder before the first move.
	capsuleBytes int64
}

func run(cfg config) error {
	b := &bench{cfg: cfg, c: newContent(cfg.seed)}
	defer b.close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		b.close()
		os.Exit(130)
	}()
	if err := b.setup(); err != nil {
		return err
	}
	if err := b.firstMove(); err != nil {
		return err
	}
	if err := b.changedMove("2. move back B -> A after rewriting whole files", 0); err != nil {
		return err
	}
	if err := b.changedMove(fmt.Sprintf("3. move again after rewriting %d bytes inside the same number of files", cfg.part), cfg.part); err != nil {
		return err
	}
	return b.frozenWindow()
}

func (b *bench) close() {
	if b.pr != nil {
		b.pr.close()
	}
	if b.rs != nil {
		b.rs.stop()
	}
}

// setup builds the workspace, starts the nodes and the rsync daemon,
// creates the agent and fills its journal.
func (b *bench) setup() error {
	cfg := b.cfg
	ws := filepath.Join(cfg.dir, "workspace")
	t := time.Now()
	if err := makeWorkspace(ws, cfg.files, cfg.size, b.c); err != nil {
		return err
	}
	fmt.Printf("workspace: %d files x %s = %s written in %.1f s\n", cfg.files, human(int64(cfg.size)), human(int64(cfg.files)*int64(cfg.size)), time.Since(t).Seconds())
	var err error
	if b.pr, err = newPair(cfg.bin, cfg.dir, cfg.inprocess); err != nil {
		return err
	}
	fmt.Printf("nodes: A %s on %s, B %s on %s (each reaches the other through a byte-counting proxy)\n", b.pr.a.id, b.pr.a.listen, b.pr.b.id, b.pr.b.listen)
	if b.rs, err = startRsyncd(cfg.dir); err != nil {
		return err
	}
	t = time.Now()
	out, err := b.pr.cli("agent", "create", "--name", "movebench", "--from", ws, "--stopped", "--data", b.pr.a.dir)
	if err != nil {
		return err
	}
	b.agent = strings.TrimSpace(out)
	fmt.Printf("agent %s created on A from the workspace in %.1f s\n", b.agent, time.Since(t).Seconds())
	return b.fill()
}

// fill adds the journal events with the node stopped (the node API has no
// bulk append), then starts the node and the agent again.
func (b *bench) fill() error {
	a := b.pr.a
	if err := b.pr.stop(a); err != nil {
		return err
	}
	t := time.Now()
	n, err := fillJournal(a.dir, a.id, b.agent, b.cfg.events, b.c)
	if err != nil {
		return err
	}
	fmt.Printf("journal: %d events (%s) appended in %.1f s\n", b.cfg.events, human(n), time.Since(t).Seconds())
	if err := b.pr.start(a); err != nil {
		return err
	}
	b.pr.ab.SetUpstream(b.pr.b.listen)
	b.pr.ba.SetUpstream(a.listen)
	if _, err := b.pr.cli("agent", "start", b.agent, "--data", a.dir); err != nil {
		return err
	}
	return waitEvents(a, b.agent, b.cfg.events+10, 30*time.Second)
}

func (b *bench) capsuleDir(p *proc) string {
	return filepath.Join(p.dir, "agents", b.agent, "capsule")
}

func (b *bench) workDir(p *proc) string {
	return filepath.Join(p.dir, "agents", b.agent, "work")
}

// firstMove: rsync of the capsule folder, then the first move A -> B.
func (b *bench) firstMove() error {
	a := b.pr.a
	var err error
	if b.capsuleBytes, err = dirSize(b.capsuleDir(a)); err != nil {
		return err
	}
	fmt.Printf("\n== 1. first move A -> B of a capsule of %s\n", human(b.capsuleBytes))
	var synced rsyncRun
	if b.cfg.withSync {
		if synced, err = b.rs.push(b.capsuleDir(a), "capsule", "--fsync"); err != nil {
			return err
		}
		if err := b.rs.reset("capsule"); err != nil {
			return err
		}
	}
	rs, err := b.rs.push(b.capsuleDir(a), "capsule")
	if err != nil {
		return err
	}
	ws, err := b.rs.push(b.workDir(a), "work")
	if err != nil {
		return err
	}
	m, err := b.pr.move(a, b.agent, nil)
	if err != nil {
		return err
	}
	fmt.Printf("  rsync -a to the daemon        %7.2f s   sent %s, received %s (through a proxy like the nodes)\n", rs.Seconds, human(rs.Sent), human(rs.Received))
	if b.cfg.withSync {
		fmt.Printf("  rsync -a --fsync              %7.2f s   sent %s\n", synced.Seconds, human(synced.Sent))
	}
	fmt.Printf("  rsync -a of the workspace     %7.2f s   sent %s (plain files, no journal)\n", ws.Seconds, human(ws.Sent))
	m.print("capsule move")
	b.printTimings(m)
	fmt.Printf("  wire / capsule size           %7.3f     (target <= 1.02)\n", float64(m.Wire)/float64(b.capsuleBytes))
	fmt.Printf("  move time / rsync -a time     %7.2f     (target <= 1.00)\n", m.Seconds/rs.Seconds)
	if b.cfg.withSync {
		fmt.Printf("  move time / rsync --fsync     %7.2f\n", m.Seconds/synced.Seconds)
	}
	return nil
}

// changedMove rewrites PCT % of the files on the holder (whole files, or
// part bytes inside each), commits them (agent stop/start), pushes the
// same change with rsync, then moves the agent to the other node.
func (b *bench) changedMove(title string, part int) error {
	from, err := b.holder()
	if err != nil {
		return err
	}
	to := b.pr.other(from)
	k := max(1, int(float64(b.cfg.files)*b.cfg.pct/100+0.5))
	_, written, err := rewriteFiles(b.workDir(from), b.cfg.files, k, part, b.c)
	if err != nil {
		return err
	}
	fmt.Printf("\n== %s (%s -> %s)\n  changed: %d of %d files, %s rewritten\n", title, from.name, to.name, k, b.cfg.files, human(written))
	for _, verb := range []string{"stop", "start"} { // commit the change into the capsule folder for rsync
		if _, err := b.pr.cli("agent", verb, b.agent, "--data", from.dir); err != nil {
			return err
		}
	}
	rs, err := b.rs.push(b.capsuleDir(from), "capsule")
	if err != nil {
		return err
	}
	ws, err := b.rs.push(b.workDir(from), "work")
	if err != nil {
		return err
	}
	before, err := journalCount(to.dir, b.agent)
	if err != nil {
		return err
	}
	m, err := b.pr.move(from, b.agent, nil)
	if err != nil {
		return err
	}
	tail, err := tailBytes(to.dir, b.agent, from.id, before)
	if err != nil {
		return err
	}
	newBlobs := int64(k) * int64(b.cfg.size)
	bound := float64(newBlobs+tail) * 1.01
	fmt.Printf("  rsync -a --stats, same change %7.2f s   sent %s, received %s\n", rs.Seconds, human(rs.Sent), human(rs.Received))
	fmt.Printf("  rsync -a of the workspace     %7.2f s   sent %s, received %s (plain files, no journal)\n", ws.Seconds, human(ws.Sent), human(ws.Received))
	m.print("capsule move")
	b.printTimings(m)
	fmt.Printf("  floor: new blobs %s + journal tail %s (%s with 1%%)\n", human(newBlobs), human(tail), human(int64(bound)))
	fmt.Printf("  wire / floor+1%%               %7.3f     (target <= 1.00)\n", float64(m.Wire)/bound)
	fmt.Printf("  files that change on every move (sent as deltas when the target holds an older version): %s\n", b.overhead(to))
	fmt.Printf("  wire / rsync sent+received    %7.3f     (target <= 1.00)\n", float64(m.Wire)/float64(rs.Sent+rs.Received))
	return nil
}

// overhead lists the capsule files that change on every commit whatever
// the workspace did, with their sizes: they travel on every move, as delta
// frames against the version the target holds, or whole when it holds none.
func (b *bench) overhead(p *proc) string {
	var parts []string
	for _, rel := range []string{"capsule/manifest.json", "capsule/artifacts/snapshot.json", "work/steps.log"} {
		if fi, err := os.Stat(filepath.Join(p.dir, "agents", b.agent, filepath.FromSlash(rel))); err == nil {
			parts = append(parts, fmt.Sprintf("%s %s", rel, human(fi.Size())))
		}
	}
	return strings.Join(parts, ", ")
}

// printTimings prints the phases of the move m as the progress stream
// reported them and, for in-process nodes, what their debug logs timed.
func (b *bench) printTimings(m measured) {
	fmt.Printf("      phases (as the progress stream saw them): %s\n", m.phases())
	if b.cfg.inprocess {
		fmt.Printf("      node timings: %s\n", strings.Join(b.pr.timings(m.start, m.end), "; "))
	}
}

// holder returns the node running the agent.
func (b *bench) holder() (*proc, error) {
	for _, p := range []*proc{b.pr.a, b.pr.b} {
		st, err := p.client().Agent(context.Background(), b.agent)
		if err == nil && st.State == api.StateRunning {
			return p, nil
		}
	}
	return nil, errors.New("no node runs the agent")
}

// frozenWindow measures moves whose last HOT bytes changed after pre-copy
// began, so the frozen window carries them.
func (b *bench) frozenWindow() error {
	fmt.Printf("\n== 4. frozen window: %d moves, %s changed after pre-copy began\n", b.cfg.moves, human(int64(b.cfg.hot)))
	if b.cfg.cpuprofile != "" {
		f, err := os.Create(b.cfg.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var frozen []float64
	for attempt := 0; len(frozen) < b.cfg.moves && attempt < 3*b.cfg.moves; attempt++ {
		from, err := b.holder()
		if err != nil {
			return err
		}
		hot := filepath.Join(from.dir, "agents", b.agent, "work", "hot.bin")
		data := b.c.bytes(b.cfg.hot)
		m, err := b.pr.move(from, b.agent, func() { _ = os.WriteFile(hot, data, 0o644) })
		if err != nil {
			return err
		}
		valid := m.FrozenBytes >= int64(b.cfg.hot)
		m.print(fmt.Sprintf("%s -> %s", from.name, b.pr.other(from).name))
		fmt.Printf("      frozen window carried %s\n", human(m.FrozenBytes))
		b.printTimings(m)
		if !valid {
			fmt.Println("      (the change was pre-copied before the freeze: not counted)")
			continue
		}
		frozen = append(frozen, float64(m.Result.FrozenMS))
	}
	if len(frozen) == 0 {
		return errors.New("no move carried the change in its frozen window")
	}
	sort.Float64s(frozen)
	fmt.Printf("  median frozen window          %7.0f ms  over %d moves (target < 50 ms; QEMU default max downtime 300 ms, Xen 60-210 ms)\n", frozen[len(frozen)/2], len(frozen))
	return nil
}

func human(n int64) string {
	switch {
	case n < 0:
		return "?"
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
