package main

import "github.com/spf13/cobra"

// This file holds `capsule memory` until the memory index's verbs bring
// their own parent command (cmd/capsule/memory.go); that file then adds
// newMemoryShowCmd and this one goes.

func init() {
	addCommand(func() *cobra.Command {
		c := &cobra.Command{
			Use:   "memory",
			Short: "Show an agent's memory",
			Long:  "Show an agent's memory: its working memory (memory show).",
		}
		c.AddCommand(newMemoryShowCmd())
		return c
	})
}
