package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/api"
)

// errAgentBlocked is what agent wait returns for an agent that cannot go
// on without an operator.
var errAgentBlocked = errors.New("the agent is blocked")

func newAgentWaitCmd() *cobra.Command {
	var data string
	var timeout time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "wait AGENT",
		Short: "Wait until the agent has finished its turn (idle), for scripts",
		Long: `Wait until the agent, on the node that holds it (--data), has nothing left to
do: its loop is idle, waiting for a user message. A message said with agent
say (or a model change) makes the agent busy at once, so

  capsule agent say AGENT "..." && capsule agent wait AGENT

returns once the answer is journaled. Exits 0 when idle; 1 when the agent is
blocked (the reason is printed: a refused request, a missing key), not
running (stopped, frozen, moved) or the timeout passed. A counter agent is
never idle: wait returns when the timeout passes.`,
		Example: `  capsule agent wait 01J... --data ~/capsule-a
  capsule agent say 01J... "now run the tests" --data ~/capsule-a && capsule agent wait 01J... --timeout 10m --data ~/capsule-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usageError{fmt.Errorf("--timeout %s: want a positive duration", timeout)}
			}
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			deadline := time.Now().Add(timeout)
			for {
				st, err := cl.Agent(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				var done error
				switch {
				case st.Activity == "idle":
				case st.Activity == api.WatchWaiting && len(st.Waiting) > 0:
					done = fmt.Errorf("agent %s waits for approval of call %s (%s): capsule agent approve %s %s", st.ID, st.Waiting[0].CallID, st.Waiting[0].Tool, st.ID, st.Waiting[0].CallID)
				case st.State == api.StateBlocked:
					done = fmt.Errorf("%w: %s", errAgentBlocked, st.Blocked)
				case st.State != api.StateRunning:
					done = fmt.Errorf("agent %s is %s, not running", st.ID, st.State)
				case time.Now().After(deadline):
					done = fmt.Errorf("agent %s is still %s after %s", st.ID, st.Activity, timeout)
				default:
					select {
					case <-cmd.Context().Done():
						return cmd.Context().Err()
					case <-time.After(50 * time.Millisecond):
					}
					continue
				}
				if asJSON {
					if err := printJSON(cmd.OutOrStdout(), st); err != nil {
						return err
					}
				} else if done == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "%s idle (%d events)\n", st.ID, st.Events)
				}
				if done != nil {
					return verifyError{done} // exit 1: the agent is not idle
				}
				return nil
			}
		},
	}
	dataFlag(c, &data)
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	c.Flags().BoolVar(&asJSON, "json", false, "print the agent's status as JSON when done")
	return c
}
