package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/api"
)

// `capsule agent say` and `capsule agent model`: one journal event each,
// written by the node that holds the agent.

func newAgentSayCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "say AGENT TEXT",
		Short: "Send the agent a user message (- reads it from stdin)",
		Long: `Journal TEXT as a user message of the agent and wake it, on the node that
holds it (--data). TEXT "-" reads the message from stdin. The text must be
valid UTF-8, not empty, at most 1 MiB. A node the agent moved away from, or
one whose move keeps it frozen, refuses and names the holder. Prints the
new event's ID.`,
		Example: `  capsule agent say 01J... "summarize notes.md" --data ~/capsule-a
  git diff | capsule agent say 01J... - --data ~/capsule-a`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := sayText(cmd.InOrStdin(), args[1])
			if err != nil {
				return err
			}
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			ref, err := cl.Say(cmd.Context(), args[0], api.SayRequest{Text: text})
			if err != nil {
				return err
			}
			return printRef(cmd.OutOrStdout(), ref, asJSON)
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&asJSON, "json", false, "print the event's reference as JSON")
	return c
}

// sayText returns arg, or stdin when arg is "-", checked as a message.
func sayText(stdin io.Reader, arg string) (string, error) {
	text := arg
	if arg == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, api.MaxSayText+1))
		if err != nil {
			return "", fmt.Errorf("say: read stdin: %w", err)
		}
		text = strings.TrimRight(string(b), "\n")
	}
	if err := api.CheckSayText(text); err != nil {
		return "", usageError{err}
	}
	return text, nil
}

func printRef(w io.Writer, ref api.EventRef, asJSON bool) error {
	if asJSON {
		return printJSON(w, ref)
	}
	_, err := fmt.Fprintln(w, ref.ID)
	return err
}

func newAgentModelCmd() *cobra.Command {
	var data string
	var req api.ModelRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "model AGENT --provider P --model M [--api A] [--base-url U]",
		Short: "Switch the agent to another model (journals a model_change)",
		Long: `Journal a model_change for the agent and wake it: from its next step it is
served by model M of provider P through API A. P is openai, anthropic,
google, ollama, or any name for an OpenAI-compatible server (with --api
chat). A is the journal's spelling: chat, responses, messages or
generateContent; by default responses for openai, messages for anthropic,
generateContent for google, chat for ollama. The node refuses a model its
renderer cannot serve.

--base-url is where this node reaches the model's server (e.g.
http://127.0.0.1:8080/v1). It is a fact of this host, kept by the node in
its own record of the agent, not in the capsule: a node the agent moves to
keeps its own. A model change without --base-url clears it.`,
		Example: `  capsule agent model 01J... --provider anthropic --model claude-sonnet-4-5 --data ~/capsule-a
  capsule agent model 01J... --provider local --api chat --model qwen3 --base-url http://127.0.0.1:8080/v1 --data ~/capsule-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			ref, err := cl.SetModel(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return printRef(cmd.OutOrStdout(), ref, asJSON)
		},
	}
	dataFlag(c, &data)
	fl := c.Flags()
	fl.StringVar(&req.Provider, "provider", "", "the provider, as the journal names it (required)")
	fl.StringVar(&req.Model, "model", "", "the provider's model name (required)")
	fl.StringVar(&req.API, "api", "", "the provider's API: chat, responses, messages, generateContent (default from --provider)")
	fl.StringVar(&req.BaseURL, "base-url", "", "where this node reaches the model's server (kept by the node, not in the capsule)")
	fl.BoolVar(&asJSON, "json", false, "print the event's reference as JSON")
	_ = c.MarkFlagRequired("provider")
	_ = c.MarkFlagRequired("model")
	return c
}
