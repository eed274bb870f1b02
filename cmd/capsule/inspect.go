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

func init() { addCommand(newInspectCmd) }

func newInspectCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Show a capsule's identity, holder, schema versions, sizes and counts",
		Long: `Inspect describes the capsule folder PATH from its manifest and a listing of
its files: the agent's ID, name and creation time; the holder (node and
epoch); the schema version of every kind of state; the build that made the
last commit; the journal's event count and sizes; file sizes; the snapshot's
file, directory and link counts; the blob count; the environment's variables
count, secret names and tools. It reads no file body; use "capsule verify" to
check the bytes.`,
		Example: `  capsule inspect ./agent
  capsule inspect ./agent --json | jq .journal.events`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isArchivePath(args[0]) {
				return usageError{errors.New("inspect reads a capsule folder; import the archive first (capsule import), or verify it (capsule verify)")}
			}
			info, err := capsule.Inspect(vfs.OS{}, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), info)
			}
			printInfo(cmd.OutOrStdout(), info)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printInfo(w io.Writer, in *capsule.Info) {
	line := func(k, format string, args ...any) { fmt.Fprintf(w, "%-10s %s\n", k, fmt.Sprintf(format, args...)) }
	line("agent", "%s %q", in.Agent.ID, in.Agent.Name)
	line("created", "%s", in.Agent.Created)
	if in.Holder.Node == "" && in.Holder.Epoch == 0 {
		line("holder", "none")
	} else {
		line("holder", "node %s, epoch %d", in.Holder.Node, in.Holder.Epoch)
	}
	line("writer", "%s (%s)", in.Writer.Release, in.Writer.Commit)
	var vs []string
	for _, k := range schema.Kinds {
		vs = append(vs, fmt.Sprintf("%s %d", k, in.Schemas[k]))
	}
	line("schemas", "%s", strings.Join(vs, ", "))
	line("journal", "%d events, %s committed, %s on disk, %d machines", in.Journal.Events,
		humanBytes(in.Journal.CommittedBytes), humanBytes(in.Journal.FileBytes), in.Journal.Machines)
	if s := in.Snapshot; s != nil {
		line("snapshot", "%d files (%s), %d empty dirs, %d links", s.Files, humanBytes(s.Bytes), s.Dirs, s.Symlinks)
	}
	line("blobs", "%d (%s)", in.Blobs.Count, humanBytes(in.Blobs.Bytes))
	for _, f := range in.Files {
		line("file", "%-32s %s", f.Path, humanBytes(f.Size))
	}
	if e := in.Environment; e != nil {
		line("env", "%d variables; secrets: %s; tools: %s; network %s", e.Vars, orNone(e.Secrets), orNone(e.Tools), e.Network)
	}
	line("total", "%s", humanBytes(in.TotalBytes))
	line("signed", "%v", in.Signed)
	if in.Pending {
		line("pending", "an interrupted commit completes on the next open")
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
