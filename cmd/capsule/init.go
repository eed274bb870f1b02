package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

func init() { addCommand(newInitCmd) }

// writerConfig is the capsule.Config of this build: every commit the CLI
// makes records its release and commit.
func writerConfig() capsule.Config {
	return capsule.Config{Writer: manifest.Writer{Release: release, Commit: buildCommit()}}
}

func newInitCmd() *cobra.Command {
	var name, id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "init DIR [--name NAME]",
		Short: "Create a new, empty capsule folder with a new agent ID",
		Long: `Init creates DIR (which must not exist or be empty) as a valid, empty capsule:

  manifest.json                    identity, holder, schema versions, digests
  memory/working_memory.md         the agent's notes (empty)
  memory/timeline_events.jsonl     the journal (empty)
  memory/vector_index/index.json   the semantic index (empty)
  artifacts/snapshot.json          the workspace snapshot (empty)
  artifacts/blobs/                 file bodies by sha256
  environment/spec.json            the sandbox spec (no variables, no network)

The agent gets a new ULID as its ID, stable for its whole life. The folder is
built beside DIR and renamed into place, so a crash leaves no half capsule.`,
		Example: `  capsule init ./agent --name research-bot
  capsule init ./agent --json
  capsule verify ./agent`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := capsule.InitConfig{Config: writerConfig(), Name: name, ID: id}
			c, err := capsule.Init(vfs.OS{}, args[0], cfg)
			if err != nil {
				return err
			}
			m := c.Manifest()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					Dir   string         `json:"dir"`
					Agent manifest.Agent `json:"agent"`
				}{args[0], m.Agent})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created capsule %s in %s\n", m.Agent.ID, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "a human label for the agent")
	cmd.Flags().StringVar(&id, "id", "", "use this agent ID (a ULID) instead of a new one")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the new agent's identity as JSON")
	return cmd
}
