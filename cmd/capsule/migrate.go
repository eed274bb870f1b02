package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

func init() { addCommand(newMigrateCmd) }

func newMigrateCmd() *cobra.Command {
	var to string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "migrate DIR [--to RELEASE] [--dry-run]",
		Short: "Convert a capsule folder in place to the schema versions of a release",
		Long: `Migrate converts the capsule DIR, in place and atomically, to the schema
versions this release writes (docs/FORMAT.md §11), or with --to to those of
an earlier release, for a rollback. Each older file goes through the tested
schema steps, is checked, and is committed with the others in one commit,
the manifest last: a crash leaves the old state or the new one.

A step that drops or narrows information keeps the original bytes as a blob
the manifest lists (extension dev.agentcapsule.originals); "capsule gc" never
removes them. "capsule migrate DIR --to 0.1.0" restores those bytes, and the
manifest 0.1.0 wrote when nothing changed since, so that the folder is again
exactly what 0.1.0 wrote. Roll back with this release's binary before the
older one runs: 0.1.0 does not know the list.

A version this release does not read (newer, or below its floor) is refused,
naming the kind, the version, the release that wrote it and the one that
reads it; nothing is written. So is a rollback that an older version cannot
express (an HTTP MCP server, for 0.1.0). --dry-run checks every step and
prints what would change, writing nothing.`,
		Example: `  capsule migrate ./agent
  capsule migrate ./agent --dry-run --json
  capsule migrate ./agent --to 0.1.0     # before running the 0.1.0 binary`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := archiveVerifyOptions()
			res, err := capsule.Migrate(vfs.OS{}, args[0], writerConfig(), capsule.MigrateOptions{To: to, DryRun: dryRun, Verify: &opts})
			if err != nil {
				return migrateError(err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			printMigrate(cmd.OutOrStdout(), res)
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", schema.Release, "the release whose schema versions to write (an earlier one rolls back)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check and print the steps, write nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// migrateError maps a refused migration to exit 1 and an unknown release
// to a usage error.
func migrateError(err error) error {
	switch {
	case errors.Is(err, capsule.ErrRefused): // says that nothing was written
		return verifyError{err}
	case errors.Is(err, capsule.ErrVerify), errors.Is(err, schema.ErrNotExpressible), errors.Is(err, schema.ErrInput):
		return verifyError{fmt.Errorf("%w; nothing was written", err)}
	case errors.Is(err, capsule.ErrUnknownRelease):
		return usageError{err}
	}
	return err
}

func printMigrate(w io.Writer, r *capsule.MigrateResult) {
	verb := "migrated"
	if r.DryRun {
		verb = "would migrate"
	}
	if len(r.Changes) == 0 {
		fmt.Fprintf(w, "%s already has the schema versions of release %s; nothing to do\n", r.Dir, r.Release)
		return
	}
	fmt.Fprintf(w, "%s %s to the schema versions of release %s:\n", verb, r.Dir, r.Release)
	for _, c := range r.Changes {
		how := "by the schema steps"
		if c.How == "original" {
			how = "restored from the kept original"
		}
		fmt.Fprintf(w, "  %-13s %d -> %d  %s (%s)\n", c.Kind, c.From, c.To, c.Path, how)
		for _, s := range c.Steps {
			fmt.Fprintf(w, "                         %s\n", s)
		}
	}
	if len(r.Kept) > 0 {
		var names []string
		for _, o := range r.Kept {
			names = append(names, fmt.Sprintf("%s (%s %d, %s)", o.Path, o.Kind, o.Version, o.Digest.Short()))
		}
		fmt.Fprintf(w, "  originals kept: %s\n", strings.Join(names, ", "))
	}
	fmt.Fprintf(w, "  manifest %s", r.Manifest)
	if r.Removed > 0 {
		fmt.Fprintf(w, "; %d original blob(s) no longer needed removed", r.Removed)
	}
	fmt.Fprintln(w)
}
