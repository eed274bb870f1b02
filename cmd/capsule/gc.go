package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/vfs"
)

func init() { addCommand(newGCCmd) }

func newGCCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "gc DIR",
		Short: "Remove the blobs of a capsule folder that nothing references any more",
		Long: `GC removes from DIR/artifacts/blobs the blobs that neither the committed
workspace snapshot nor an attachment of the journal references: what earlier
snapshots left behind (a commit never removes a blob; "capsule verify" warns
about each one). It is a commit like any other: it is refused while another
writer, such as a node hosting the capsule, holds it.

It fails closed: if the snapshot or the committed journal does not match the
manifest, or a journal line naming attachments does not decode, it removes
nothing (exit 1; run "capsule verify DIR" to see why).`,
		Example: `  capsule gc ./agent
  capsule gc ./agent --json
  capsule verify ./agent    # no unreferenced-blob warnings`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := capsule.Open(vfs.OS{}, args[0], writerConfig())
			if err != nil {
				return err
			}
			res, err := c.GC()
			if errors.Is(err, capsule.ErrCorrupt) {
				return verifyError{fmt.Errorf("%w; nothing was removed (run capsule verify %s)", err, args[0])}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %d unreferenced blob(s) (%s); %d referenced blob(s) kept\n", res.Removed, humanBytes(res.Bytes), res.Kept)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
