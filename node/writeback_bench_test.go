package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/node/store"
	"github.com/agentcapsule/capsule/vfs"
)

// BenchmarkFirstMove moves a freshly created agent with a large workspace
// to a node that never saw it (issue 5, performance target 2): every blob
// travels, the target verifies it, stores it durably and builds the
// shadow workspace from it. Two in-process nodes on loopback, real mutual
// TLS, the real disk under $TMPDIR. Each iteration creates a new agent,
// so the target's CAS store starts empty.
//
// Metrics: move_s (request to committed outcome, median), precopy_s (the
// pre-copy phase of that move), cpu_s (user and system CPU time of this
// process, both nodes, during the move: the measure that shared machines
// disturb least) and, with CAPSULE_BENCH_VERBOSE=1 (which
// slows the copies), fsyncs: file and directory syncs of both nodes during
// the move, mean, and when each kind of sync happened. bench/move.sh compares the same move with
// rsync; this benchmark is for profiling the node alone:
//
//	CAPSULE_BENCH_WORKSPACE_MB=1024 go test ./node -run '^$' -bench FirstMove -benchtime 1x
//	CAPSULE_BENCH_CPUPROFILE=/tmp/first.pprof ...   profile the moves only
//
// The workspace defaults to 256 MiB of 1 MiB files; it needs about 4
// times the workspace size of free disk space per iteration.
func BenchmarkFirstMove(b *testing.B) {
	cfg := benchConfigFromEnv(b)
	if cfg.workspaceMB == 0 {
		cfg.workspaceMB = 256
	}
	// countingFS hides the files' copy_file_range and writeback from the
	// node: syncs are only counted when asked for.
	slog := &syncLog{}
	var fsys vfs.FS = vfs.OS{}
	verbose := os.Getenv("CAPSULE_BENCH_VERBOSE") != ""
	if verbose {
		fsys = countingFS{FS: vfs.OS{}, log: slog}
	}
	ws := filepath.Join(b.TempDir(), "workspace")
	if err := writeBenchWorkspace(ws, cfg); err != nil {
		b.Fatal(err)
	}
	var moves, precopy, cpu []time.Duration
	var fsyncs int
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		cl := newCluster(b, nodeOpts{fsys: fsys}, nodeOpts{fsys: fsys})
		st, err := cl.nodes[0].CreateAgent(context.Background(), api.CreateAgentRequest{Name: "bench", From: ws,
			Model: &api.ModelRef{Provider: "ollama", API: "chat", Model: "llama3.2"}})
		if err != nil {
			b.Fatal(err)
		}
		waitSteps(b, cl.nodes[0], st.ID, 2)
		stop := startProfile(b, os.Getenv("CAPSULE_BENCH_CPUPROFILE"))
		cpu0 := cpuTime()
		start := time.Now()
		b.StartTimer()
		res := moveWithin(b, cl.nodes[0], cl.nodes[1], st.ID, 20*time.Minute)
		b.StopTimer()
		took := time.Since(start)
		cpu = append(cpu, cpuTime()-cpu0)
		stop()
		if res.Outcome != api.OutcomeCommitted {
			b.Fatalf("move: %+v", res)
		}
		mr := lastMove(cl.nodes[0], st.ID)
		moves = append(moves, took)
		precopy = append(precopy, phaseTime(mr, api.PhasePrecopy))
		fsyncs += len(slog.between(start, start.Add(took)))
		b.Logf("first move of %s: %.2f s (pre-copy %.2f s), %.2f s of CPU (both nodes), %d bytes sent, %d syncs", sizeName(cfg.workspaceBytes()),
			took.Seconds(), precopy[len(precopy)-1].Seconds(), cpu[len(cpu)-1].Seconds(), res.BytesSent, len(slog.between(start, start.Add(took))))
		if verbose {
			printSyncSpans(slog.between(start, start.Add(took)), start)
		}
		for _, n := range cl.nodes {
			n.Close(context.Background())
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(median(moves).Seconds(), "move_s")
	b.ReportMetric(median(precopy).Seconds(), "precopy_s")
	b.ReportMetric(median(cpu).Seconds(), "cpu_s")
	b.ReportMetric(float64(fsyncs)/float64(b.N), "fsyncs")
}

// phaseTime returns how long the move stayed in phase p (its first visit).
func phaseTime(mr *moveRun, p string) time.Duration {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	for i, ph := range mr.phases {
		if ph.phase == p && i+1 < len(mr.phases) {
			return mr.phases[i+1].at.Sub(ph.at)
		}
	}
	return 0
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := range s { // insertion sort: a handful of values
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

// startProfile starts a CPU profile into path (none when path is empty)
// and returns the function that ends it.
func startProfile(b *testing.B, path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// printSyncSpans prints, per kind of path synced (CAS blob, shadow file,
// directory, other), how many syncs there were, when the first began and
// the last ended after start, and their summed time.
func printSyncSpans(evs []syncEvent, start time.Time) {
	type span struct {
		n          int
		first, end time.Duration
		sum        time.Duration
	}
	spans := map[string]*span{}
	var kinds []string
	for _, e := range evs {
		k := "other"
		switch {
		case strings.HasSuffix(e.path, "/"):
			k = "dir"
		case strings.Contains(e.path, "/cas/"):
			k = "cas"
		case strings.Contains(e.path, "/shadow/"):
			k = "shadow"
		}
		sp := spans[k]
		if sp == nil {
			sp = &span{first: e.at.Sub(start)}
			spans[k] = sp
			kinds = append(kinds, k)
		}
		sp.n++
		sp.end = max(sp.end, e.at.Add(e.took).Sub(start))
		sp.sum += e.took
	}
	for _, k := range kinds {
		sp := spans[k]
		fmt.Fprintf(os.Stderr, "  %-6s %5d syncs from %7.2f s to %7.2f s, %8.2f s summed\n", k, sp.n, sp.first.Seconds(), sp.end.Seconds(), sp.sum.Seconds())
	}
}

// BenchmarkCASReceive stores CAPSULE_BENCH_BLOBS (default 256) random
// 1 MiB blobs in a CAS store on the real disk the way Push does (each
// written, then fsynced and renamed by the finisher while the next is
// written), then makes the directory durable: the target's share of a
// first move's pre-copy without the network. MB/s is blob bytes stored.
func BenchmarkCASReceive(b *testing.B) {
	k := 256
	if v := os.Getenv("CAPSULE_BENCH_BLOBS"); v != "" {
		fmt.Sscan(v, &k)
	}
	blobs := make([][]byte, k)
	ds := make([]digest.Digest, k)
	for i := range blobs {
		blobs[i] = randomBytes(uint64(i+1), 1<<20)
		ds[i] = digest.FromBytes(blobs[i])
	}
	b.SetBytes(int64(k) << 20)
	b.ResetTimer()
	for i := range b.N {
		c := store.Disk{FS: vfs.OS{}, Dir: filepath.Join(b.TempDir(), fmt.Sprint("cas", i))}
		fin := newFinisher()
		for j := range blobs {
			pb, _, err := c.Write(ds[j], bytes.NewReader(blobs[j]))
			if err != nil {
				b.Fatal(err)
			}
			fin.do(pb.Finish)
		}
		if err := fin.wait(); err != nil {
			b.Fatal(err)
		}
		if err := c.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime returns the user and system CPU time this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
