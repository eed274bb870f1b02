package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/api"
)

// `capsule agent log`: the journal of an agent by its ID, read through
// the node that has it (no folder path), printed as `capsule log` prints
// a folder's, and followed live with --follow.

func newAgentLogCmd() *cobra.Command {
	var data string
	var f logFlags
	c := &cobra.Command{
		Use:   "log AGENT",
		Short: "Show an agent's journal through the node, and follow it live",
		Long: `Show the journal of an agent the node on --data has, as a timeline in total
order (the lines of capsule log), or with --json as its raw lines, one JSON
object each. With --follow it keeps printing events as the node journals
them, until Ctrl-C. A follower that falls behind the node reconnects from
the journal and misses nothing. capsule log PATH still shows a folder.`,
		Example: `  capsule agent log 01J... --data ~/capsule-a
  capsule agent log 01J... --follow --data ~/capsule-a
  capsule agent log 01J... --json --kind tool_call --data ~/capsule-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return runAgentLog(ctx, cl, args[0], cmd.OutOrStdout(), f)
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&f.json, "json", false, "print the raw journal lines (JSONL)")
	c.Flags().BoolVarP(&f.follow, "follow", "f", false, "keep printing events as they are journaled")
	c.Flags().StringSliceVar(&f.kinds, "kind", nil, "show only events of this kind (repeatable or comma-separated)")
	return c
}

// runAgentLog prints the agent's journal, then, with f.follow, what is
// journaled until ctx ends. A watch cut off for lagging is opened again
// after the events printed so far.
func runAgentLog(ctx context.Context, cl *api.LocalClient, id string, w io.Writer, f logFlags) error {
	out := bufio.NewWriterSize(w, 1<<16)
	defer out.Flush()
	p := newPrinter(out, w, f)
	seen := 0
	for {
		lagged, err := printWatch(ctx, cl, id, seen, p, f.follow, &seen)
		if err != nil || !lagged {
			return err
		}
	}
}

// printWatch prints the events of one watch from position from, counting
// them in *seen, until the history ends (follow false), the watch ends,
// or ctx does. It reports whether the watch ended because it lagged.
func printWatch(ctx context.Context, cl *api.LocalClient, id string, from int, p *printer, follow bool, seen *int) (bool, error) {
	s, err := cl.Watch(ctx, id, api.WatchOptions{From: from})
	if err != nil {
		return false, err
	}
	defer s.Close()
	live := false
	for m := range s.Messages() {
		switch {
		case m.Lagged:
			return true, p.flush()
		case m.CaughtUp && !follow:
			return false, p.flush()
		case m.CaughtUp:
			live = true
			if err := p.flush(); err != nil {
				return false, err
			}
		case m.Event != nil:
			e, err := m.JournalEvent()
			if err != nil {
				return false, fmt.Errorf("agent log: %w", err)
			}
			*seen++
			p.print(&e)
			if live {
				if err := p.flush(); err != nil {
					return false, err
				}
			}
		}
	}
	if err := p.flush(); err != nil {
		return false, err
	}
	return false, s.Err()
}
