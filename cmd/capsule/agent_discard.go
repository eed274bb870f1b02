package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newAgentDiscardCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "discard AGENT",
		Short: "Start an ephemeral agent over instead of migrating it, keeping its old journal",
		Long: `Discard the conversation of an agent this node holds and start it over from
its environment spec and workspace, with a new journal. Only an agent whose
environment spec declares it ephemeral (lifecycle.ephemeral: cheap,
idempotent, safe to restart) may be discarded, and even then the discard is
refused, naming the event, when its journal holds an approval or a denial,
usage (input plus output tokens) above the spec's lifecycle.discard_max_tokens,
or a dispatched external effect (FORMAT §11.9.4). A refused discard changes
nothing.

The runner stops at a step boundary; the old journal is kept, byte for byte,
as DATA/agents/<ID>/discarded-<time>.jsonl (never deleted); the new journal
holds the epoch, the model the agent last used, and a resumed event whose
reason says it was discarded. The workspace is kept as it is. An agent that
was running runs again.`,
		Example: "  capsule agent discard 01J... --data ~/capsule-a",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			res, err := cl.DiscardAgent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "discarded %s: its old journal (%d events) is kept as %s; state %s\n",
				args[0], res.Events, res.SetAside, res.Agent.State)
			return nil
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
