package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
)

// Shell completion of values: flags with a fixed set of values complete
// from it; agent IDs and peer node IDs come from the local node through its
// socket (--data or $CAPSULE_DATA), and complete to nothing when no node
// runs there.

// providers are the journal's provider names (api.ModelRef.Provider).
var providers = []string{"anthropic", "google", "ollama", "openai"}

// providerAPIs are the journal's API names (api.ModelRef.API).
var providerAPIs = []string{"chat", "generateContent", "messages", "responses"}

// agentArgVerbs take an agent ID as their first argument.
var agentArgVerbs = map[string]bool{
	"agent status": true, "agent stop": true, "agent start": true, "agent rm": true, "agent discard": true,
	"agent say": true, "agent model": true, "agent log": true, "agent chat": true, "agent wait": true,
	"move": true, "move status": true, "move resolve": true,
}

// addCompletions registers the value completions on every command, by
// flag name, so a verb that gains one of these flags completes it too.
func addCompletions(root *cobra.Command) {
	walk(root, func(c *cobra.Command) {
		flagValues(c, "kind", kindNames())
		flagValues(c, "api", providerAPIs)
		flagValues(c, "producer", providers)
		if verbPath(c) == "render" {
			flagValues(c, "provider", apiNames())
		} else {
			flagValues(c, "provider", providers)
		}
		if c.Flags().Lookup("to") != nil && strings.HasPrefix(verbPath(c), "move") {
			_ = c.RegisterFlagCompletionFunc("to", completePeers)
		}
		switch {
		case agentArgVerbs[verbPath(c)]:
			c.ValidArgsFunction = firstArg(completeAgents)
		case verbPath(c) == "node peer rm":
			c.ValidArgsFunction = firstArg(completePeers)
		}
	})
}

func flagValues(c *cobra.Command, name string, values []string) {
	if c.Flags().Lookup(name) == nil {
		return
	}
	_ = c.RegisterFlagCompletionFunc(name, func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, v := range values {
			if strings.HasPrefix(v, prefix) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

func kindNames() []string {
	out := make([]string, 0, len(journal.KnownKinds))
	for _, k := range journal.KnownKinds {
		out = append(out, string(k))
	}
	return out
}

func apiNames() []string {
	out := make([]string, 0, len(render.APIs))
	for _, a := range render.APIs {
		out = append(out, string(a))
	}
	return out
}

type completeFunc = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// firstArg completes the first positional argument with f, and nothing
// after it.
func firstArg(f completeFunc) completeFunc {
	return func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f(c, args, prefix)
	}
}

// completionClient asks the node on the command's --data, briefly.
func completionClient(c *cobra.Command) (*api.LocalClient, context.Context, context.CancelFunc, bool) {
	dir, _ := c.Flags().GetString("data")
	cl, err := localClient(dir)
	if err != nil {
		return nil, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	return cl, ctx, cancel, true
}

func completeAgents(c *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	cl, ctx, cancel, ok := completionClient(c)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cancel()
	list, err := cl.Agents(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, a := range list {
		if strings.HasPrefix(a.ID, prefix) {
			out = append(out, a.ID+"\t"+a.Name+" ("+a.State+")")
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func completePeers(c *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	cl, ctx, cancel, ok := completionClient(c)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cancel()
	peers, err := cl.Peers(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, p := range peers {
		if strings.HasPrefix(p.ID, prefix) {
			out = append(out, p.ID+"\t"+p.Addr)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
