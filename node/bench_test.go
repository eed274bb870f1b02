package node

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/transfer"
	"github.com/agentcapsule/capsule/vfs"
)

// BenchmarkMoveFrozenWindow moves one running agent back and forth between
// two in-process nodes on loopback (real mutual TLS, the real disk under
// $TMPDIR) and reports the frozen window of each move: from the freeze on
// the source to the target's activated reply (the agent runs there).
//
// Metrics: frozen_ms (median over the moves), frozen_ms_max, round_trips
// (requests inside the frozen window, the most of any move), fsyncs (file
// and directory syncs of both nodes inside the window, mean per move),
// precopy_rounds and window_bytes (bytes sent inside the window, mean).
//
// The default is the demo's small workspace (3 files, 30 KB) and the
// journal the agent writes itself. Environment variables scale it:
//
//	CAPSULE_BENCH_WORKSPACE_MB=1024  workspace of random 1 MiB files
//	CAPSULE_BENCH_FILE_KB=1024       size of each of those files
//	CAPSULE_BENCH_EVENTS=10000       journal events seeded before the first move
//	CAPSULE_BENCH_CHANGED_KB=1024    bytes rewritten after pre-copy, before each freeze
//	CAPSULE_BENCH_VERBOSE=1          log every sync inside each window
//
// For the figure (1 GiB, 10,000 events, 1 MiB changed):
//
//	CAPSULE_BENCH_WORKSPACE_MB=1024 CAPSULE_BENCH_EVENTS=10000 CAPSULE_BENCH_CHANGED_KB=1024 \
//	  go test ./node -run '^$' -bench MoveFrozenWindow -benchtime 3x
//
// It needs about 5 times the workspace size of free disk space.
func BenchmarkMoveFrozenWindow(b *testing.B) {
	cfg := benchConfigFromEnv(b)
	slog := &syncLog{}
	fsys := countingFS{FS: vfs.OS{}, log: slog}
	step := 20 * time.Millisecond
	cl := newCluster(b, nodeOpts{fsys: fsys, step: step}, nodeOpts{fsys: fsys, step: step})
	ws := filepath.Join(b.TempDir(), "workspace")
	start := time.Now()
	if err := writeBenchWorkspace(ws, cfg); err != nil {
		b.Fatal(err)
	}
	st, err := cl.nodes[0].CreateAgent(context.Background(), api.CreateAgentRequest{Name: "bench", From: ws,
		Model: &api.ModelRef{Provider: "ollama", API: "chat", Model: "llama3.2"}})
	if err != nil {
		b.Fatal(err)
	}
	id := st.ID
	waitSteps(b, cl.nodes[0], id, 2)
	if cfg.events > 0 {
		seedJournal(b, cl.nodes[0], id, cfg.events)
	}
	for _, n := range cl.nodes {
		n.hooks.beforeFreeze = func(agent string) { changeWorkspace(b, n, agent, cfg) }
	}
	b.Logf("setup: %s workspace, %d events seeded, %s changed before each freeze (%s)",
		sizeName(cfg.workspaceBytes()), cfg.events, sizeName(int64(cfg.changedKB)<<10), time.Since(start).Round(time.Millisecond))
	rtt := roundTrip(b, cl.nodes[0], cl.nodes[1])
	var frozen []time.Duration
	var fsyncs, bytes, rounds, rts int
	b.ResetTimer()
	for i := range b.N {
		from, to := cl.nodes[i%2], cl.nodes[(i+1)%2]
		res := moveWithin(b, from, to, id, 20*time.Minute)
		if res.Outcome != api.OutcomeCommitted {
			b.Fatalf("move %d: %+v", i, res)
		}
		b.StopTimer()
		mr := lastMove(from, id)
		win := slog.between(mr.frozenAt, mr.runningAt)
		frozen = append(frozen, mr.runningAt.Sub(mr.frozenAt))
		fsyncs += len(win)
		bytes += int(res.WindowBytes)
		rounds += res.PrecopyRounds
		rts = max(rts, res.RoundTripsFrozen)
		b.Logf("move %d: frozen %.1f ms, %d round trips, %d fsyncs in the window, %d pre-copy rounds, %d bytes sent (%d in the window), render %+v",
			i, ms(frozen[i]), res.RoundTripsFrozen, len(win), res.PrecopyRounds, res.BytesSent, res.WindowBytes, res.Render)
		if os.Getenv("CAPSULE_BENCH_VERBOSE") != "" {
			for _, p := range mr.phases {
				fmt.Fprintf(os.Stderr, "  +%7.2f ms phase %s\n", ms(p.at.Sub(mr.frozenAt)), p.phase)
			}
			fmt.Fprintf(os.Stderr, "  +%7.2f ms running on the target\n", ms(mr.runningAt.Sub(mr.frozenAt)))
			for _, e := range win {
				fmt.Fprintf(os.Stderr, "  +%7.2f ms %6.2f ms sync %s\n", ms(e.at.Sub(mr.frozenAt)), ms(e.took), strings.TrimPrefix(e.path, filepath.Dir(filepath.Dir(from.cfg.Dir))))
			}
		}
		waitSteps(b, to, id, 2)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(frozen, func(i, j int) bool { return frozen[i] < frozen[j] })
	b.ReportMetric(ms(frozen[len(frozen)/2]), "frozen_ms")
	b.ReportMetric(ms(frozen[len(frozen)-1]), "frozen_ms_max")
	b.ReportMetric(float64(rts), "round_trips")
	b.ReportMetric(float64(fsyncs)/float64(b.N), "fsyncs")
	b.ReportMetric(float64(rounds)/float64(b.N), "precopy_rounds")
	b.ReportMetric(float64(bytes)/float64(b.N), "window_bytes")
	b.ReportMetric(ms(rtt), "rtt_ms")
}

// roundTrip returns the median time of a protocol request that does no
// work on the peer (a pre-copy have of an agent it never heard of): the
// round trip over the mutual-TLS link.
func roundTrip(b *testing.B, from, to *Node) time.Duration {
	m := transfer.Message{Type: transfer.MsgHave, Agent: "00000000000000000000RTTPRB", Move: "00000000000000000000RTTPRM", From: string(from.ID()), To: string(to.ID())}
	var ds []time.Duration
	for i := range 21 {
		start := time.Now()
		if _, err := from.call(to.ID(), m); err != nil {
			b.Fatal(err)
		}
		if i > 0 { // the first one opens the connection and the probe's files
			ds = append(ds, time.Since(start))
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

type benchConfig struct {
	workspaceMB, fileKB, events, changedKB int
}

func (c benchConfig) workspaceBytes() int64 {
	if c.workspaceMB == 0 {
		return 30 << 10
	}
	return int64(c.workspaceMB) << 20
}

func benchConfigFromEnv(b *testing.B) benchConfig {
	get := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("%s=%q: want a number >= 0", name, v)
		}
		return n
	}
	return benchConfig{workspaceMB: get("CAPSULE_BENCH_WORKSPACE_MB", 0), fileKB: max(1, get("CAPSULE_BENCH_FILE_KB", 1024)),
		events: get("CAPSULE_BENCH_EVENTS", 0), changedKB: get("CAPSULE_BENCH_CHANGED_KB", 0)}
}

// writeBenchWorkspace writes the demo's workspace, or workspaceMB of random
// files, plus the file that changes before every freeze.
func writeBenchWorkspace(ws string, cfg benchConfig) error {
	files := map[string][]byte{
		"README.md":      []byte("# bench workspace\n"),
		"notes/plan.md":  []byte("1. count\n2. move\n3. keep counting\n"),
		"data/table.csv": []byte(strings.Repeat("id,value\n1,42\n", 2000)),
		"notes/.keep":    nil,
	}
	if cfg.changedKB > 0 {
		files["changing.bin"] = randomBytes(0, cfg.changedKB<<10)
	}
	for name, body := range files {
		if err := writeHostFile(filepath.Join(ws, filepath.FromSlash(name)), body); err != nil {
			return err
		}
	}
	size := cfg.fileKB << 10
	for i := 0; int64(i)*int64(size) < int64(cfg.workspaceMB)<<20; i++ {
		name := filepath.Join(ws, "big", fmt.Sprintf("d%02d", i%64), fmt.Sprintf("f%05d.bin", i))
		if err := writeHostFile(name, randomBytes(uint64(i+1), size)); err != nil {
			return err
		}
	}
	return nil
}

func writeHostFile(name string, body []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, body, 0o644)
}

func randomBytes(seed uint64, n int) []byte {
	var s [32]byte
	copy(s[:], strconv.FormatUint(seed, 10))
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

var changeSeq uint64 = 1 << 40

// changeWorkspace rewrites changing.bin in the agent's workspace on n:
// changedKB of new content since the last pre-copy round.
func changeWorkspace(b *testing.B, n *Node, id string, cfg benchConfig) {
	if cfg.changedKB == 0 {
		return
	}
	changeSeq++
	path := filepath.Join(n.cfg.Dir, "agents", id, workDir, "changing.bin")
	if err := vfs.WriteFile(n.fsys, path, randomBytes(changeSeq, cfg.changedKB<<10), 0o644); err != nil {
		b.Error(err)
	}
}

// seedJournal appends k conversation events to the agent's journal through
// its log, from many goroutines so that group commit shares the fsyncs.
func seedJournal(b *testing.B, n *Node, id string, k int) {
	a, err := n.getTenant(id)
	if err != nil {
		b.Fatal(err)
	}
	a.mu.Lock()
	log, epoch := a.log, a.holder.Holder()
	a.mu.Unlock()
	prod := journal.Producer{Provider: "ollama", API: "chat", Model: "llama3.2"}
	const workers = 64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < k; i += workers {
				var kind journal.Kind = journal.KindUser
				var body any = journal.UserMessage{Text: fmt.Sprintf("question %d: what does line %d of the table say?", i, i)}
				if i%2 == 1 {
					kind, body = journal.KindAssistant, journal.AssistantMessage{Text: fmt.Sprintf("Line %d says 1,42 like the others; nothing changed since step %d.", i, i-1), Producer: prod}
				}
				if _, err := log.Append(kind, epoch, n.wallTime(), body); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func lastMove(n *Node, id string) *moveRun {
	a, _ := n.getTenant(id)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.src.move
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func sizeName(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// syncLog records every File.Sync and SyncDir a countingFS performs.
type syncLog struct {
	mu     sync.Mutex
	events []syncEvent
}

type syncEvent struct {
	at   time.Time
	took time.Duration
	path string
}

func (l *syncLog) add(path string, at time.Time) {
	l.mu.Lock()
	l.events = append(l.events, syncEvent{at: at, took: time.Since(at), path: path})
	l.mu.Unlock()
}

// between returns the syncs that started in [from, to].
func (l *syncLog) between(from, to time.Time) []syncEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []syncEvent
	for _, e := range l.events {
		if !e.at.Before(from) && !e.at.After(to) {
			out = append(out, e)
		}
	}
	return out
}

// countingFS is a vfs.FS that logs its syncs.
type countingFS struct {
	vfs.FS
	log *syncLog
}

// ReadDirStat passes the one-pass listing through (vfs.DirStater).
func (c countingFS) ReadDirStat(name string) ([]fs.FileInfo, error) {
	return vfs.ReadDirStat(c.FS, name)
}

func (c countingFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, log: c.log}, nil
}

func (c countingFS) Open(name string) (vfs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, log: c.log}, nil
}

func (c countingFS) SyncDir(name string) error {
	at := time.Now()
	err := c.FS.SyncDir(name)
	c.log.add(name+"/", at)
	return err
}

type countingFile struct {
	vfs.File
	log *syncLog
}

func (f countingFile) Sync() error {
	at := time.Now()
	err := f.File.Sync()
	f.log.add(f.Name(), at)
	return err
}

// ReadFrom keeps io.Copy's fast paths (copy_file_range) of the real file.
func (f countingFile) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := f.File.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{f.File}, r)
}
