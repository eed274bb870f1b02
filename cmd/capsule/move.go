package main

import (
	"fmt"
	"io"
	"os"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/node"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func init() { addCommand(newMoveCmd) }

func newMoveCmd() *cobra.Command {
	var data, to string
	var asJSON bool
	c := &cobra.Command{
		Use:   "move AGENT --to NODE",
		Short: "Move a running agent to another node, never running it twice",
		Long: `Move an agent the local node holds to a peer node. Blobs are pre-copied while
the agent still runs; then the agent freezes at a step boundary, the target
gets the offer (epoch + 1), the missing blobs and the journal tail, verifies
every digest and prepares; activate is the point of no return. Any failure
before it rolls back: the agent resumes here at its old epoch.

Progress (phase, bytes, blobs skipped) goes to stderr; the last line gives
the frozen window (freeze to running on the target), the bytes sent and the
round trips inside the frozen window. Exit status 0 means committed; a move
that rolled back, found this node stale, or waits for its resolution exits 3.`,
		Example: `  capsule move 01J... --to nq3x... --data ~/capsule-a
  capsule move 01J... --to nq3x... --data ~/capsule-a --json
  capsule move status 01J... --data ~/capsule-a
  capsule move resolve 01J... --data ~/capsule-a
  capsule move resolve 01J... --force --by alice --data ~/capsule-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usageError{fmt.Errorf("--to NODE is required")}
			}
			if _, err := node.ParseID(to); err != nil {
				return usageError{fmt.Errorf("--to: %w", err)}
			}
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			show := progressPrinter(cmd.ErrOrStderr(), asJSON)
			res, err := cl.Move(cmd.Context(), args[0], api.MoveRequest{To: to}, show)
			if err != nil {
				return err
			}
			return reportMove(cmd.OutOrStdout(), res, asJSON)
		},
	}
	dataFlag(c, &data)
	c.Flags().StringVar(&to, "to", "", "the target node's ID (a peer of the local node)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the move result as JSON")
	c.AddCommand(newMoveStatusCmd(), newMoveResolveCmd())
	return c
}

// progressPrinter shows progress on stderr: one rewritten line on a
// terminal, one line per phase otherwise; nothing in --json mode.
func progressPrinter(w io.Writer, quiet bool) func(api.MoveProgress) {
	if quiet {
		return nil
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	last := ""
	return func(p api.MoveProgress) {
		line := fmt.Sprintf("%-9s %s sent, %d blobs sent, %d skipped", p.Phase, humanBytes(p.BytesSent), p.BlobsSent, p.BlobsSkipped)
		switch {
		case tty:
			fmt.Fprintf(w, "\r\033[K%s", line)
			if p.Phase == api.PhaseDone {
				fmt.Fprintln(w)
			}
		case p.Phase != last:
			fmt.Fprintln(w, line)
		}
		last = p.Phase
	}
}

func reportMove(w io.Writer, res api.MoveResult, asJSON bool) error {
	if asJSON {
		if err := printJSON(w, res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "%s: agent %s from %s to %s at epoch %d; frozen %d ms, %s sent (%d blobs, %d skipped), %d round trips frozen\n",
			res.Outcome, res.Agent, res.From, res.To, res.Epoch, res.FrozenMS, humanBytes(res.BytesSent), res.BlobsSent, res.BlobsSkipped, res.RoundTripsFrozen)
		if res.Reason != "" {
			fmt.Fprintf(w, "reason: %s\n", res.Reason)
		}
	}
	switch {
	case res.Outcome == api.OutcomeCommitted:
		return nil
	case res.Reason == "":
		return fmt.Errorf("move %s: %s", res.MoveID, res.Outcome)
	}
	return fmt.Errorf("move %s: %s: %s", res.MoveID, res.Outcome, res.Reason)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func newMoveStatusCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "status AGENT",
		Short: "Show the latest move of an agent from this node",
		Long: `Show the latest move of an agent from this node: its ID, target, epoch,
phase, outcome and the reason of any outcome but a commit (from whichever
side decided it). An agent that never moved from this node answers
"no move" (phase "none" in --json) and exits 0.`,
		Example: "  capsule move status 01J... --data ~/capsule-a --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			st, err := cl.MoveStatus(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if st.Phase == api.PhaseNone && !asJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "agent %s: no move\n", args[0])
				return nil
			}
			return printMoveStatus(cmd.OutOrStdout(), st, asJSON)
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printMoveStatus(w io.Writer, st api.MoveStatus, asJSON bool) error {
	if asJSON {
		return printJSON(w, st)
	}
	fmt.Fprintf(w, "move %s to %s at epoch %d: phase %s", st.MoveID, st.To, st.Epoch, st.Phase)
	if st.Outcome != "" {
		fmt.Fprintf(w, ", %s", st.Outcome)
	}
	if st.Reason != "" {
		fmt.Fprintf(w, " (%s)", st.Reason)
	}
	fmt.Fprintln(w)
	return nil
}

func newMoveResolveCmd() *cobra.Command {
	var data, by string
	var force, asJSON bool
	c := &cobra.Command{
		Use:   "resolve AGENT",
		Short: "Settle a move whose activate got no answer (after a partition)",
		Long: `Ask the target again which epoch it holds. The question is a fencing write:
a target that prepared but never activated aborts the move and burns its
epoch before it answers, so a late activate can never start a second copy.

--force is the operator's override when the target is gone for good: this
node burns a new epoch above every epoch it knows, resumes the agent here and
records who forced it. It is outside the protocol's guarantee: use it only
when you know the target will not run the agent (see docs/PROTOCOL.md).
On a move that rolled back and is still sending its abort to an unreachable
target, --force only ends that clean-up so the agent can move again.`,
		Example: `  capsule move resolve 01J... --data ~/capsule-a
  capsule move resolve 01J... --force --by alice --data ~/capsule-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			if force && by == "" {
				by = os.Getenv("USER")
			}
			st, err := cl.Resolve(cmd.Context(), args[0], api.ResolveRequest{Force: force, By: by})
			if err != nil {
				return err
			}
			return printMoveStatus(cmd.OutOrStdout(), st, asJSON)
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&force, "force", false, "override: resume here at a new epoch (outside the guarantee)")
	c.Flags().StringVar(&by, "by", "", "who forces it, recorded with the override (default $USER)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
