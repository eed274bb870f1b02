// Command journalbench measures the journal for bench/journal.sh: durable
// appends against a raw write+fsync loop on the same disk, group commit with
// concurrent appenders, verification throughput, and merge times. Each
// subcommand prints one line "name value unit".
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/journal/logfile"
	rt "github.com/agentcapsule/capsule/render/rendertest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: journalbench fsync|append|gen|genrender|genmerge|verify|merge [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"fsync": benchFsync, "append": benchAppend, "gen": gen, "genrender": genRender, "genmerge": genMerge, "verify": benchVerify, "merge": benchMerge,
	}
	run, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown subcommand", os.Args[1])
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "journalbench:", err)
		os.Exit(1)
	}
}

// text is a user message body of a typical size.
func text(i int) string {
	return fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 10))
}

// lineSize is the size of one appended line, so the raw loop writes the same.
func lineSize() int {
	w := journal.NewWriter("m0123456789abcdefghijklmnop")
	e, _ := w.Next(journal.KindUser, 1, "2026-01-01T00:00:00.000000000Z", journal.UserMessage{Text: text(100000)})
	return len(journal.Encode(e)) + 1
}

// benchFsync is the disk's raw rate: write one line, fsync, repeat.
func benchFsync(args []string) error {
	fs := flag.NewFlagSet("fsync", flag.ExitOnError)
	dir := fs.String("dir", os.TempDir(), "directory on the disk to measure")
	dur := fs.Duration("for", 3*time.Second, "how long to run")
	fs.Parse(args)
	f, err := os.Create(filepath.Join(*dir, "raw-fsync.jsonl"))
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	line := append(bytes.Repeat([]byte("x"), lineSize()-1), '\n')
	n, start := 0, time.Now()
	for time.Since(start) < *dur {
		if _, err := f.Write(line); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		n++
	}
	fmt.Printf("raw_fsync %.1f ops/s\n", float64(n)/time.Since(start).Seconds())
	return nil
}

// benchAppend runs durable appends from w goroutines for a while.
func benchAppend(args []string) error {
	fs := flag.NewFlagSet("append", flag.ExitOnError)
	dir := fs.String("dir", os.TempDir(), "directory on the disk to measure")
	dur := fs.Duration("for", 3*time.Second, "how long to run")
	workers := fs.Int("workers", 1, "concurrent appenders")
	prof := fs.String("cpuprofile", "", "write a CPU profile here")
	fs.Parse(args)
	if *prof != "" {
		pf, err := os.Create(*prof)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(pf)
		defer pprof.StopCPUProfile()
	}
	path := filepath.Join(*dir, fmt.Sprintf("append-%d.jsonl", *workers))
	os.Remove(path)
	defer os.Remove(path)
	l, err := logfile.Open(logfile.Config{Path: path, Epoch: 1})
	if err != nil {
		return err
	}
	defer l.Close()
	var n atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < *workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Since(start) < *dur; i++ {
				if _, err := l.Append("m0123456789abcdefghijklmnop", journal.KindUser, 1, "2026-01-01T00:00:00.000000000Z", journal.UserMessage{Text: text(100000 + i%1000)}); err != nil {
					firstErr.Store(err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	st := l.Stats()
	fmt.Printf("append_%d %.1f ops/s (%.1f events per fsync)\n", *workers, float64(n.Load())/time.Since(start).Seconds(), float64(st.Events)/float64(max(st.Syncs, 1)))
	return nil
}

// gen writes a verified journal of n events from 4 machines.
func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	n := fs.Int("n", 1000000, "events")
	out := fs.String("o", "journal.jsonl", "output file")
	fs.Parse(args)
	events := generate(*n, 0, 4, 0)
	return write(*out, events)
}

// generate builds n events of `machines` machines, round robin, with
// clocks from c0+1 and message numbers from t0. It seals events directly,
// skipping Writer.Next's body validation, to keep setup short.
func generate(n, t0, machines int, c0 uint64) []journal.Event {
	heads := make([]journal.Head, machines)
	out := make([]journal.Event, 0, n)
	for i := 0; i < n; i++ {
		m := i % machines
		body, _ := json.Marshal(journal.UserMessage{Text: text(t0 + i)})
		e := journal.Event{
			Machine: fmt.Sprintf("m%026d", m), Seq: heads[m].Seq + 1, Prev: heads[m].ID,
			Clock: c0 + uint64(i) + 1, Epoch: 1, V: journal.SchemaVersion,
			Time: "2026-01-01T00:00:00Z", Kind: journal.KindUser, Body: body,
		}
		if err := journal.Seal(&e); err != nil {
			panic(err)
		}
		heads[m] = journal.Head{Seq: e.Seq, ID: e.ID, Clock: e.Clock}
		out = append(out, e)
	}
	return out
}

// genRender writes a verified journal of about n events of a coding
// agent's conversation (rendertest.Long: user turns, reasoning, parallel
// calls, results of a few kilobytes, answers, usage), for bench/render.sh.
func genRender(args []string) error {
	fs := flag.NewFlagSet("genrender", flag.ExitOnError)
	n := fs.Int("n", 100000, "events")
	out := fs.String("o", "render.jsonl", "output file")
	fs.Parse(args)
	events := rt.Long(*n, rt.Claude)
	var prev journal.Head
	for i := range events {
		e := &events[i]
		e.Machine, e.Seq, e.Prev, e.Clock = "m0123456789abcdefghijklmnop", prev.Seq+1, prev.ID, prev.Clock+1
		e.Time = "2026-01-01T00:00:00Z"
		if err := journal.Seal(e); err != nil {
			return err
		}
		prev = journal.Head{Seq: e.Seq, ID: e.ID, Clock: e.Clock}
	}
	return write(*out, events)
}

func write(path string, events []journal.Event) error {
	var buf bytes.Buffer
	for i := range events {
		buf.Write(journal.Encode(events[i]))
		buf.WriteByte('\n')
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// benchVerify reads and verifies a journal file as `capsule log verify` does.
func benchVerify(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ExitOnError)
	prof := fs.String("cpuprofile", "", "write a CPU profile here")
	fs.Parse(args)
	if *prof != "" {
		pf, err := os.Create(*prof)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(pf)
		defer pprof.StopCPUProfile()
	}
	path := fs.Arg(0)
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	events := 0
	probs, err := journal.Scan(f, func(*journal.Event, int) { events++ })
	if err != nil {
		return err
	}
	el := time.Since(start)
	if len(probs) > 0 {
		return fmt.Errorf("%d problems, first %v", len(probs), probs[0])
	}
	info, _ := f.Stat()
	fmt.Printf("verify %.1f MB/s (%d events, %d bytes, %.3f s, peak RSS %d MiB)\n", float64(info.Size())/el.Seconds()/1e6, events, info.Size(), el.Seconds(), maxRSS())
	return nil
}

// genMerge writes two verified journals of n events each that share n/2,
// for `capsule log merge` in bench/journal.sh.
func genMerge(args []string) error {
	fs := flag.NewFlagSet("genmerge", flag.ExitOnError)
	n := fs.Int("n", 100000, "events in each journal")
	a := fs.String("a", "a.jsonl", "first output file")
	b := fs.String("b", "b.jsonl", "second output file")
	fs.Parse(args)
	shared := generate(*n/2, 0, 4, 0)
	if err := write(*a, fork(shared, "a", *n-*n/2)); err != nil {
		return err
	}
	return write(*b, fork(shared, "b", *n-*n/2))
}

// benchMerge merges two journals of n events each sharing n/2.
func benchMerge(args []string) error {
	fs := flag.NewFlagSet("merge", flag.ExitOnError)
	n := fs.Int("n", 100000, "events in each journal")
	fs.Parse(args)
	shared := generate(*n/2, 0, 4, 0)
	a := fork(shared, "a", *n-*n/2)
	b := fork(shared, "b", *n-*n/2)
	start := time.Now()
	m, err := journal.Merge(a, b)
	if err != nil {
		return err
	}
	el := time.Since(start)
	fmt.Printf("merge_%d %.3f s (%d + %d -> %d events, in memory: peak RSS %d MiB)\n", *n, el.Seconds(), len(a), len(b), len(m), maxRSS())
	return nil
}

// maxRSS is the process's peak resident set size in MiB.
func maxRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss / 1024 // kilobytes on Linux
}

// fork continues a shared journal with k events of a machine of its own.
func fork(shared []journal.Event, name string, k int) []journal.Event {
	w := journal.NewWriter("fork-"+name, shared...)
	out := append([]journal.Event(nil), shared...)
	for i := 0; i < k; i++ {
		e, err := w.Next(journal.KindUser, 1, "", journal.UserMessage{Text: text(i)})
		if err != nil {
			panic(err)
		}
		out = append(out, e)
	}
	return out
}
