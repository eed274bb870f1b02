package main

import (
	"errors"
	"fmt"
	"os/user"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/api"
)

func newAgentApproveCmd() *cobra.Command {
	return newDecisionCmd(api.DecisionApproved)
}

func newAgentDenyCmd() *cobra.Command {
	return newDecisionCmd(api.DecisionDenied)
}

// newDecisionCmd builds agent approve or agent deny.
func newDecisionCmd(decision string) *cobra.Command {
	var data, by, reason, digest string
	var asJSON bool
	verb, short := "approve", "Approve a tool call the agent waits on"
	if decision == api.DecisionDenied {
		verb, short = "deny", "Deny a tool call the agent waits on, with the reason the model is told"
	}
	c := &cobra.Command{
		Use:   verb + " AGENT CALL_ID",
		Short: short,
		Long: `Decide on a tool call that waits for approval (agent status lists the calls an
agent waits on, with the tool and the digest of the arguments). The decision is
journaled as an approval event that binds to the call id, the arguments, the
tool's identity and schema and the environment spec in force, and the agent is
woken: an approved call runs once (its dispatch consumes the approval), a denied
one gives the model an error result with the reason. A retry by the model is a
new call and needs a new approval.

The decision is refused, naming its reason code, when: no call waits under that
id (unknown_call); it was decided already or has its result (already_decided);
the arguments differ from the ones --arguments-digest names or the request named
(arguments_changed); the tool or the spec changed since the request
(tool_changed, spec_changed: the agent asks again); the call id appears twice in
one step (duplicate_call); or the journal holds the dispatch that consumed an
approval of this call (consumed).`,
		Example: fmt.Sprintf(`  capsule agent status 01J... --data ~/capsule-a
  capsule agent %s 01J... call_42 --data ~/capsule-a%s
  capsule agent %s 01J... call_42 --arguments-digest sha256:... --by alice --json --data ~/capsule-a`,
			verb, map[bool]string{true: ` --reason "not during the freeze"`}[decision == api.DecisionDenied], verb),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if decision == api.DecisionDenied && reason == "" {
				return usageError{errors.New("deny: --reason is required: the model is told why")}
			}
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			ref, err := cl.Approve(cmd.Context(), args[0], api.ApproveRequest{CallID: args[1], Decision: decision, By: decider(by), Reason: reason, ArgumentsDigest: digest})
			if err != nil {
				return refused(err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), ref)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s call %s of agent %s (event %s)\n", decision, args[1], args[0], ref.ID)
			return nil
		},
	}
	dataFlag(c, &data)
	c.Flags().StringVar(&by, "by", "", "who decides (default: the user running the command)")
	c.Flags().StringVar(&digest, "arguments-digest", "", "refuse unless the call's arguments have this digest (the one agent status showed)")
	if decision == api.DecisionDenied {
		c.Flags().StringVar(&reason, "reason", "", "why the call is denied; the model is told (required)")
	} else {
		c.Flags().StringVar(&reason, "reason", "", "a note kept with the approval")
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the journaled event as JSON")
	return c
}

// decider is --by, or the name of the user running the command.
func decider(by string) string {
	if by != "" {
		return by
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "operator"
}

// refused marks an error that carries a reason code (a refused decision or
// effect record) for exit status 1, and names the code.
func refused(err error) error {
	var ae *api.Error
	if errors.As(err, &ae) && ae.Reason != "" {
		return verifyError{fmt.Errorf("refused (%s): %w", ae.Reason, err)}
	}
	return err
}
