package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

func newAgentEffectCmd() *cobra.Command {
	var data, by, note string
	var done, failed, asJSON bool
	c := &cobra.Command{
		Use:   "effect AGENT CALL_ID (--done|--failed)",
		Short: "Record what an external call whose outcome is unknown did",
		Long: `Record what an unresolved external effect did. A call of an external tool that
was dispatched and cut by a crash or a move before its result was journaled is
never run again: the model got an interrupted result saying the outcome is
unknown, and agent status lists the call as unresolved until an operator, having
checked the outside world, records --done (the effect happened) or --failed (it
did not), with a note. The record is journaled (effect_outcome); it is refused
(unknown_call) when the agent has no unresolved effect of that call.`,
		Example: `  capsule agent status 01J... --data ~/capsule-a
  capsule agent effect 01J... call_42 --done --note "the deploy is live" --data ~/capsule-a
  capsule agent effect 01J... call_42 --failed --note "no charge on the card" --json --data ~/capsule-a`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if done == failed {
				return usageError{fmt.Errorf("effect: give exactly one of --done and --failed")}
			}
			outcome := api.OutcomeDone
			if failed {
				outcome = api.OutcomeFailed
			}
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			ref, err := cl.RecordEffect(cmd.Context(), args[0], api.EffectRequest{CallID: args[1], Outcome: outcome, By: decider(by), Note: note})
			if err != nil {
				return refused(err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), ref)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recorded call %s of agent %s as %s (event %s)\n", args[1], args[0], outcome, ref.ID)
			return nil
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&done, "done", false, "the effect happened")
	c.Flags().BoolVar(&failed, "failed", false, "the effect did not happen")
	c.Flags().StringVar(&note, "note", "", "what was checked")
	c.Flags().StringVar(&by, "by", "", "who records it (default: the user running the command)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the journaled event as JSON")
	return c
}

// printEffects prints, in agent status, the calls the agent waits on for
// approval and its unresolved external effects, with the command that
// answers each.
func printEffects(w io.Writer, st api.AgentStatus) {
	for _, a := range st.Waiting {
		fmt.Fprintf(w, "waiting: call %s (%s) for approval, arguments %s: capsule agent approve %s %s, or deny --reason ...\n",
			a.CallID, a.Tool, a.ArgumentsDigest, st.ID, a.CallID)
	}
	for _, u := range st.Unresolved {
		fmt.Fprintf(w, "effect:  call %s (%s) outcome unknown: capsule agent effect %s %s --done|--failed --note ...\n",
			u.CallID, u.Tool, st.ID, u.CallID)
	}
}

// The one-line summaries of the kinds of approvals and effects, for
// capsule log and agent log.
func init() {
	summaries[journal.KindToolDispatch] = func(b []byte) string {
		v := decodeAs[journal.ToolDispatch](b)
		s := fmt.Sprintf("%s dispatched (%s), arguments %s", v.CallID, v.Effect, v.ArgumentsDigest)
		if v.Approval != "" {
			s += ", consumes approval " + v.Approval
		}
		return s
	}
	summaries[journal.KindApprovalRequest] = func(b []byte) string {
		v := decodeAs[journal.ApprovalRequest](b)
		return fmt.Sprintf("%s %s waits for approval, arguments %s: %s", v.CallID, v.Name, v.ArgumentsDigest, v.Rule)
	}
	summaries[journal.KindApproval] = func(b []byte) string {
		v := decodeAs[journal.Approval](b)
		s := fmt.Sprintf("%s %s by %s", v.CallID, v.Decision, v.By)
		if v.Reason != "" {
			s += ": " + v.Reason
		}
		return s
	}
	summaries[journal.KindEffectOutcome] = func(b []byte) string {
		v := decodeAs[journal.EffectOutcome](b)
		s := fmt.Sprintf("%s outcome %s, recorded by %s", v.CallID, v.Outcome, v.By)
		if v.Note != "" {
			s += ": " + v.Note
		}
		return s
	}
}
