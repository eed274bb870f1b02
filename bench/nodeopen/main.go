// Command nodeopen measures a node opening an agent with a long journal, for
// bench/nodeopen.sh. "gen" lays out a node data folder holding one stopped
// agent whose journal has N events, all committed by its manifest; "open"
// starts a node on that folder (New then Start: the agent's journal is
// checked and opened, FORMAT §7.7), checks the agent is not blocked, closes
// it, and prints one line with the time taken and the process's peak RSS.
// It uses only the node's exported API, so the same source builds against
// an older tree for a before/after.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/journal/logfile"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/node"
	"github.com/agentcapsule/capsule/vfs"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: nodeopen gen|open -dir DIR [-events N]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "the node's data folder")
	events := fs.Int("events", 1000000, "journal events (gen)")
	_ = fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(*dir, *events)
	case "open":
		err = open(*dir)
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodeopen:", err)
		os.Exit(1)
	}
}

func newNode(dir string) (*node.Node, error) {
	return node.New(node.Config{Dir: dir, Socket: "-"})
}

// gen creates the agent through the node, then appends the events to its
// journal directly (one buffered write, no fsync per event) and commits
// them in its manifest, as a node that had run it for a long time would.
func gen(dir string, n int) error {
	nd, err := newNode(dir)
	if err != nil {
		return err
	}
	st, err := nd.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "long", Stopped: true})
	if err != nil {
		return err
	}
	machine := string(nd.ID())
	if err := nd.Close(context.Background()); err != nil {
		return err
	}
	capDir := filepath.Join(dir, "agents", st.ID, "capsule")
	path := filepath.Join(capDir, filepath.FromSlash(manifest.JournalPath))
	if err := appendEvents(path, machine, n); err != nil {
		return err
	}
	return commit(capDir, path)
}

func appendEvents(path, machine string, n int) error {
	l, err := logfile.Open(logfile.Config{FS: vfs.OS{}, Path: path, Epoch: 1})
	if err != nil {
		return err
	}
	w := journal.NewWriterAfter(machine, l.Summary())
	if err := l.Close(); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	filler := strings.Repeat("lorem ipsum ", 10)
	for i := range n {
		ev, err := w.Next(journal.KindUser, 1, "2026-01-01T00:00:00.000000000Z", journal.UserMessage{Text: fmt.Sprintf("message %d: %s", i, filler)})
		if err != nil {
			return err
		}
		w.Observe(&ev)
		bw.Write(journal.Encode(ev))
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

func commit(capDir, path string) error {
	l, err := logfile.Open(logfile.Config{FS: vfs.OS{}, Path: path, Epoch: 1})
	if err != nil {
		return err
	}
	s := l.Summary()
	if err := l.Close(); err != nil {
		return err
	}
	j := manifest.Journal{Events: s.Events, Bytes: s.Bytes, Digest: s.Digest, Heads: map[string]manifest.Head{}}
	for m, h := range s.Heads {
		j.Heads[m] = manifest.Head{Seq: h.Seq, ID: h.ID, Clock: h.Clock, Epoch: h.Epoch}
	}
	c, err := capsule.Open(vfs.OS{}, capDir, capsule.Config{})
	if err != nil {
		return err
	}
	return c.Commit(func(tx *capsule.Tx) error { return tx.SetJournal(j) })
}

// open starts a node on dir and reports how long New and Start took and
// the peak RSS; it fails when the agent is blocked (its journal refused).
func open(dir string) error {
	t0 := time.Now()
	nd, err := newNode(dir)
	if err != nil {
		return err
	}
	if err := nd.Start(); err != nil {
		return err
	}
	took := time.Since(t0)
	agents, err := nd.Agents(context.Background())
	if err != nil {
		return err
	}
	events := 0
	for _, a := range agents {
		events += a.Events
		if a.Blocked != "" {
			return fmt.Errorf("agent %s blocked: %s", a.ID, a.Blocked)
		}
	}
	if err := nd.Close(context.Background()); err != nil {
		return err
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Printf("open_s %.3f maxrss_mib %.1f agents %d events %d\n", took.Seconds(), float64(ru.Maxrss)/1024, len(agents), events)
	return nil
}
