package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/node"
	"github.com/spf13/cobra"
)

func init() { addCommand(newAgentCmd) }

func newAgentCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "agent",
		Short: "Create, list, inspect, stop and start the agents a node hosts",
		Long: `Manage the agents of the node running on --data. A new agent gets a ULID as
its ID, a capsule under DATA/agents/<ID>/capsule and a signed holder record
at epoch 1 for this node; the node runs it with its built-in runner.`,
		Example: `  capsule agent create --name demo --from ./workspace --data ~/capsule-a
  capsule agent list --data ~/capsule-a
  capsule agent status 01J... --data ~/capsule-a --json
  capsule agent stop 01J... --data ~/capsule-a
  capsule agent rm 01J... --data ~/capsule-b`,
	}
	c.AddCommand(newAgentCreateCmd(), newAgentListCmd(), newAgentStatusCmd(),
		newAgentLifecycleCmd("stop", "Stop an agent at a step boundary (it stays stopped across restarts)"),
		newAgentLifecycleCmd("start", "Start an agent this node holds"), newAgentRmCmd(), newAgentDiscardCmd(),
		newAgentSayCmd(), newAgentModelCmd(), newAgentLogCmd(), newAgentChatCmd(), newAgentWaitCmd(),
		newAgentApproveCmd(), newAgentDenyCmd(), newAgentEffectCmd())
	return c
}

func newAgentRmCmd() *cobra.Command {
	var data string
	c := &cobra.Command{
		Use:   "rm AGENT",
		Short: "Remove a copy of an agent this node no longer holds, and its caches",
		Long: `Remove what the node keeps of an agent it no longer holds: a retired copy
(the agent moved on) or the pre-copied blobs of a move that never came, with
their caches. Refused while the node holds the agent (running or stopped),
while a move of it is unresolved or an incoming one pending, and while it is
blocked. The node keeps the agent's holder and source records: they fence
later moves.`,
		Example: "  capsule agent rm 01J... --data ~/capsule-a",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			if err := cl.RemoveAgent(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "removed", args[0])
			return nil
		},
	}
	dataFlag(c, &data)
	return c
}

func newAgentCreateCmd() *cobra.Command {
	var data, name, from, prov, apiName, model, task, specFile string
	var stopped, asJSON bool
	c := &cobra.Command{
		Use:   "create",
		Short: "Create a new agent on the node and start it",
		Long: `Create a new agent on the node and start it.

With --provider and --model the agent is an LLM agent: its journal starts
with that model (a model_change event) and, with --task, the task as its
first user message; the node runs the agent loop on it (model, tools,
journal, one step at a time) through the endpoint it has for the provider
(see capsule node --help). Without them the node runs its built-in
counter, a runner that needs no model.

--provider is the journal's provider name: openai, anthropic, google,
ollama, or the name of an OpenAI-compatible server (with --api chat).
--api is that provider's API (chat, responses, messages,
generateContent), by default the provider's own (openai: responses). The
models of the embedded model endpoint (a simulator, not a language model)
are capsule-sim/planner and capsule-sim/echo.

--spec FILE gives the agent's environment spec (docs/FORMAT.md §11.7.1):
the MCP servers it is offered, the approval rules of its tools, its
sandbox (network hosts, limits) and the names of the secrets it needs.
The file is checked before anything is created; without it the agent
gets the default spec (no MCP server, no network, no secret).`,
		Example: `  capsule agent create --name demo --data ~/capsule-a
  capsule agent create --from ./workspace --stopped --data ~/capsule-a
  capsule agent create --from ./project --provider openai --api chat --model capsule-sim/planner \
      --task "Please read_file path=src/main.go" --data ~/capsule-a
  echo "Fix the failing test" | capsule agent create --provider anthropic --model claude-sonnet-4-5 --task - --data ~/capsule-a
  capsule agent create --from ./project --spec spec.json --provider openai --model gpt-5 --task "..." --data ~/capsule-a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var spec []byte
			if specFile != "" {
				b, err := readSpecFile(specFile)
				if err != nil {
					return err
				}
				spec = b
			}
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			if from != "" {
				if from, err = filepath.Abs(from); err != nil {
					return usageError{err}
				}
			}
			req := api.CreateAgentRequest{Name: name, From: from, Stopped: stopped, Task: task, Spec: spec}
			switch {
			case prov != "" && model != "":
				req.Model = &api.ModelRef{Provider: prov, API: apiName, Model: model}
			case prov != "" || model != "" || apiName != "":
				return usageError{errors.New("--provider and --model go together (and --api needs them)")}
			case task != "":
				return usageError{errors.New("--task needs --provider and --model: the counter takes no task")}
			}
			if task == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), node.MaxUserText+1))
				if err != nil {
					return err
				}
				req.Task = string(b)
			}
			st, err := cl.CreateAgent(cmd.Context(), req)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			fmt.Fprintln(cmd.OutOrStdout(), st.ID)
			return nil
		},
	}
	dataFlag(c, &data)
	c.Flags().StringVar(&name, "name", "", "a human label for the agent")
	c.Flags().StringVar(&from, "from", "", "a workspace folder to start from (copied)")
	c.Flags().BoolVar(&stopped, "stopped", false, "create it without starting it")
	c.Flags().StringVar(&prov, "provider", "", "the model's provider: openai, anthropic, google, ollama, or an OpenAI-compatible server's name")
	c.Flags().StringVar(&apiName, "api", "", "the provider's API: chat, responses, messages, generateContent (default: the provider's own)")
	c.Flags().StringVar(&model, "model", "", "the provider's model name (capsule-sim/planner on the embedded simulator)")
	c.Flags().StringVar(&task, "task", "", "the agent's first user message (- reads stdin)")
	c.Flags().StringVar(&specFile, "spec", "", "the agent's environment spec, a JSON file (default: the default spec)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the agent's status as JSON")
	return c
}

// readSpecFile reads an environment spec for agent create and checks it
// here, so that a bad file is named with its problems before the node is
// asked.
func readSpecFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageError{fmt.Errorf("--spec: %w", err)}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, envspec.MaxSize+1))
	if err != nil {
		return nil, usageError{fmt.Errorf("--spec %s: %w", path, err)}
	}
	if _, err := envspec.Parse(b); err != nil {
		return nil, usageError{fmt.Errorf("--spec %s: %w", path, err)}
	}
	return b, nil
}

func newAgentListCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the agents the node knows",
		Long: `List the agents the node knows, with the state of each:

  running   held here, the runner is stepping
  stopped   held here, not running (agent stop)
  frozen    held here, stopped for a move in progress
  blocked   the node will not run it here; REASON says why
  incoming  not held here: a move into this node is pending, or the node
            keeps pre-copied blobs of one (a move in pre-copy, or one
            abandoned before its offer: agent rm removes them)
  retired   held here once, moved away by this node; HOLDER names the
            successor

An agent this node never held and keeps nothing of a move of is not listed.
Only held agents count as hosted.`,
		Example: "  capsule agent list --data ~/capsule-a --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			list, err := cl.Agents(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), list)
			}
			printAgents(cmd.OutOrStdout(), list)
			return nil
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printAgents(w io.Writer, list []api.AgentStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tNAME\tSTATE\tEPOCH\tSTEPS\tEVENTS\tHOLDER\tREASON")
	for _, a := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", a.ID, a.Name, a.State, a.Epoch, a.Steps, a.Events, a.Holder, a.Blocked)
	}
	tw.Flush()
}

func newAgentStatusCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:     "status AGENT",
		Short:   "Show what the node knows about one agent",
		Example: "  capsule agent status 01J... --data ~/capsule-a",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			st, err := cl.Agent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			printStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printStatus(w io.Writer, st api.AgentStatus) {
	fmt.Fprintf(w, "agent:   %s %s\nstate:   %s\nepoch:   %d\nholder:  %s\nsteps:   %d\nevents:  %d\n",
		st.ID, st.Name, st.State, st.Epoch, st.Holder, st.Steps, st.Events)
	if st.Move != nil {
		fmt.Fprintf(w, "move:    %s to %s at epoch %d: %s %s\n", st.Move.MoveID, st.Move.To, st.Move.Epoch, st.Move.Phase, st.Move.Outcome)
	}
	if st.Sandbox != "" {
		fmt.Fprintf(w, "sandbox: %s\n", st.Sandbox)
	}
	printEffects(w, st)
	switch {
	case st.Blocked != "":
		fmt.Fprintf(w, "blocked: %s\n", st.Blocked)
	case st.Error != "":
		fmt.Fprintf(w, "error:   %s\n", st.Error)
	}
}

func newAgentLifecycleCmd(verb, short string) *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:     verb + " AGENT",
		Short:   short,
		Example: "  capsule agent " + verb + " 01J... --data ~/capsule-a",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			f := cl.StopAgent
			if verb == "start" {
				f = cl.StartAgent
			}
			st, err := f(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			printStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
