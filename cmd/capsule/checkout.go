package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/progress"
	"github.com/agentcapsule/capsule/vfs"
)

func init() { addCommand(newCheckoutCmd) }

// checkoutClosing says what a checkout does once every byte is written.
func checkoutClosing(durable bool) string {
	if durable {
		return "syncing files and directories, renaming into place"
	}
	return "renaming into place"
}

func newCheckoutCmd() *cobra.Command {
	var to string
	var workers int
	var durable, quiet, asJSON bool
	cmd := &cobra.Command{
		Use:   "checkout DIR --to WORKSPACE",
		Short: "Materialise a capsule's workspace snapshot into a folder",
		Long: `Checkout writes the workspace recorded in the capsule DIR to WORKSPACE, which
must not exist or be empty: every file byte for byte (mode 0644, or 0755 when
recorded executable), every empty directory and every symbolic link. Each
blob is checked against its sha256 while it is copied; a corrupt blob stops
the checkout and nothing is left behind. The tree is built beside WORKSPACE
and renamed into place when complete.`,
		Example: `  capsule checkout ./agent --to /tmp/project
  diff -r ~/src/project /tmp/project     # identical, minus .capsuleignore'd paths
  capsule checkout ./agent --to ./work --durable --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usageError{errors.New("--to WORKSPACE is required")}
			}
			defer boundHeap(fileHeapLimit)()
			c, err := capsule.Open(vfs.OS{}, args[0], writerConfig())
			if err != nil {
				return err
			}
			bar := progress.New(os.Stderr, "checkout", -1, quiet)
			bar.Closing(checkoutClosing(durable))
			st, err := c.Checkout(to, capsule.CheckoutConfig{Workers: workers, Progress: bar, Durable: durable})
			bar.Finish()
			if errors.Is(err, capsule.ErrCorrupt) {
				return verifyError{err}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "checked out %d files (%s), %d empty dirs, %d links to %s\n",
				st.Files, humanBytes(st.Bytes), st.Dirs, st.Symlinks, to)
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the folder to write (required; must not exist or be empty)")
	cmd.Flags().IntVar(&workers, "workers", 0, "files written at once (default: one per CPU)")
	cmd.Flags().BoolVar(&durable, "durable", false, "fsync every file and directory before the rename")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
