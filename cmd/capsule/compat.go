package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/compat"
	"github.com/agentcapsule/capsule/schema"
)

func init() {
	addCommand(newCompatCmd)
	exitDocs["compat check"] = exitDoc{verify: "restore would refuse: a version the release cannot read, or a semantic issue (each printed)", other: otherFile}
}

func newCompatCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "compat",
		Short: "Say whether a release can take up a capsule, and why not",
	}
	c.AddCommand(newCompatCheckCmd())
	return c
}

func newCompatCheckCmd() *cobra.Command {
	var asJSON bool
	var release string
	c := &cobra.Command{
		Use:   "check PATH",
		Short: "Print, per kind, the version found, the steps that would run and every semantic issue",
		Long: `Check says what a release would do with the capsule at PATH (a folder, or a
.capsule.tar or .capsule.tar.zst archive) when it restores it to run: for
every kind of state (docs/FORMAT.md §11) the version found, the versions the
release reads, and whether it reads it as it is, migrates it (naming each
step) or refuses it; then every semantic issue (§11.9), which structure
alone does not show:

  tool_missing     the journal (a past call, a pending call or an approval)
                   names a tool neither the spec nor the release has, and no
                   mapping is declared: refused, naming the tool and events
  tool_mapped      a tool served through the spec's or the release's
                   tool_mappings: resume first appends the tool_mapping
                   event printed under "append"
  authority        migrating the spec would grant something it did not
  check_skipped    a call ran without an approval its tool now requires:
                   refused; an old completion never satisfies a new rule
  approval_needed, approval_stale
                   a call that has not run needs an approval (again) under
                   the spec in force: resume asks before it runs
  v1_authority     a version-1 line of a kind version 2 adds: refused

--release names the release to check against (docs/RELEASES.md; the default
is this build's). It reads the files and writes nothing; it does not check
digests (capsule verify does).`,
		Example: `  capsule compat check ./agent
  capsule compat check ./agent --release 0.1.0      # can a rollback read it?
  capsule compat check agent.capsule.tar.zst --json | jq '.issues[] | select(.action == "refuse")'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := compat.LookupRelease(release)
			if err != nil {
				return usageError{err}
			}
			var rep *compat.Report
			err = withCompatInput(args[0], func(in compat.Input) error {
				rep, err = compat.Check(in, r)
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				printCompat(cmd.OutOrStdout(), rep)
			}
			if rep.Refused {
				return verifyError{errors.New("release " + r.Name + " would refuse to restore " + args[0])}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().StringVar(&release, "release", schema.Release, "the release to check against")
	return c
}

func printCompat(w io.Writer, rep *compat.Report) {
	fmt.Fprintf(w, "release %s, capsule written by %s\n", rep.Release, orDash(rep.Writer))
	for _, k := range rep.Kinds {
		found := fmt.Sprint(k.Found)
		if k.Min > 0 && k.Min != k.Found {
			found = fmt.Sprintf("%d-%d", k.Min, k.Found)
		}
		fmt.Fprintf(w, "%-13s version %-4s reads %d-%d  %s\n", k.Kind, found, k.Reads.Floor, k.Reads.Current, k.Action)
		for _, s := range k.Steps {
			d := ""
			if s.Destructive {
				d = " (destructive: the original is kept)"
			}
			fmt.Fprintf(w, "  step %d to %d: %s%s\n", s.From, s.To, s.Summary, d)
		}
	}
	for _, is := range rep.Issues {
		fmt.Fprintf(w, "%s %s: %s\n", is.Action, is.Code, is.Message)
		if len(is.Events) > 0 {
			fmt.Fprintf(w, "  events: %s\n", strings.Join(is.Events, " "))
		}
	}
	for _, a := range rep.Append {
		fmt.Fprintf(w, "append %s (v%d) %s\n", a.Kind, a.V, a.Body)
	}
	verdict := "restore would proceed"
	if rep.Refused {
		verdict = "restore would refuse"
	}
	fmt.Fprintln(w, verdict)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
