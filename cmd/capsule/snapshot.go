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

func init() { addCommand(newSnapshotCmd) }

func newSnapshotCmd() *cobra.Command {
	var from string
	var workers int
	var quiet, asJSON bool
	cmd := &cobra.Command{
		Use:   "snapshot DIR --from WORKSPACE",
		Short: "Record a workspace folder into a capsule (artifacts/snapshot.json and blobs)",
		Long: `Snapshot records the tree under WORKSPACE into the capsule DIR and commits it:
regular files with their exec bit, empty directories, and symbolic links
whose relative target stays inside the tree. Links that leave the tree, links
with absolute targets and special files are skipped with a warning.

A .capsuleignore file at the root of WORKSPACE lists what to leave out, in
.gitignore syntax (for example "build/", "*.log", "!keep.log").

File bodies are stored once, by sha256, in artifacts/blobs/: a blob the
capsule already has is not copied again. Files are hashed in parallel and
streamed, and so is the snapshot itself, so memory use stays small whatever
the size or the number of files. New blobs are made durable in batches
(one sync of many files, then one of the blob folder).`,
		Example: `  capsule snapshot ./agent --from ~/src/project
  printf 'node_modules/\n*.log\n' > ~/src/project/.capsuleignore
  capsule snapshot ./agent --from ~/src/project --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return usageError{errors.New("--from WORKSPACE is required")}
			}
			c, err := capsule.Open(vfs.OS{}, args[0], writerConfig())
			if err != nil {
				return err
			}
			bar := progress.New(os.Stderr, "snapshot", -1, quiet)
			bar.Closing("storing new blobs and syncing them")
			res, err := c.SnapshotFrom(from, capsule.SnapshotConfig{Workers: workers, Progress: bar,
				Warn: func(p, reason string) {
					fmt.Fprintf(cmd.ErrOrStderr(), "capsule: warning: skipped %s: %s\n", p, reason)
				}})
			bar.Finish()
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recorded %d files (%s), %d empty dirs, %d links; stored %d new blobs (%s); %d ignored, %d skipped\n",
				res.Files, humanBytes(res.Bytes), res.Dirs, res.Symlinks, res.NewBlobs, humanBytes(res.NewBytes), res.Ignored, len(res.Skipped))
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the workspace folder to record (required)")
	cmd.Flags().IntVar(&workers, "workers", 0, "files hashed at once (default: one per CPU)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
