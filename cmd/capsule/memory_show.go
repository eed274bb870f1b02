package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// newMemoryShowCmd is `capsule memory show AGENT|DIR`, a subcommand of
// `capsule memory`.
func newMemoryShowCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "show AGENT|DIR",
		Short: "Print an agent's working memory",
		Long: `Print the working memory (memory/working_memory.md) of a capsule folder DIR, or
of agent AGENT on the node running on --data: the agent's own notes, which it
edits with the memory tool and which every model request carries right after
the instructions (FORMAT §6.4). The text is printed as it is stored, so
"capsule memory show DIR > notes.md" copies it byte for byte; an empty working
memory prints nothing. --json prints the agent, the size in bytes, the cap
(the spec's memory.working_max_bytes), the digest and the text.

An argument that names an existing directory, or holds a "/", is a capsule
folder (read offline, checked against its manifest); anything else is an
agent ID.`,
		Example: "  capsule memory show ./agent\n" +
			"  capsule memory show 01J... --data ~/capsule-a\n" +
			"  capsule memory show 01J... --data ~/capsule-a --json",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := readWorkingMemory(cmd, args[0], data)
			if err != nil {
				return err
			}
			return printWorkingMemory(cmd.OutOrStdout(), m, asJSON)
		},
	}
	dataFlag(c, &data)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: agent, bytes, limit, digest, text")
	return c
}

// readWorkingMemory reads the working memory of the capsule folder arg,
// or asks the node on data for agent arg's.
func readWorkingMemory(cmd *cobra.Command, arg, data string) (api.WorkingMemory, error) {
	if isFolderArg(arg) {
		return folderWorkingMemory(arg)
	}
	cl, err := localClient(data)
	if err != nil {
		return api.WorkingMemory{}, err
	}
	return cl.WorkingMemory(cmd.Context(), arg)
}

// isFolderArg reports whether the AGENT|DIR argument arg names a capsule
// folder: an existing directory, or a path with a separator; anything
// else is an agent ID.
func isFolderArg(arg string) bool {
	fi, err := os.Stat(arg)
	return err == nil && fi.IsDir() || strings.ContainsRune(arg, os.PathSeparator)
}

// folderWorkingMemory reads the working memory of the capsule at dir,
// checked against its manifest: a mismatch is a failed verification.
func folderWorkingMemory(dir string) (api.WorkingMemory, error) {
	c, err := capsule.Open(vfs.OS{}, dir, writerConfig())
	if err != nil {
		return api.WorkingMemory{}, err
	}
	b, err := c.WorkingMemory()
	var de *capsule.DigestError
	if errors.As(err, &de) {
		return api.WorkingMemory{}, verifyError{fmt.Errorf("%s: the working memory does not match the manifest (run capsule verify %s): %w", dir, dir, err)}
	}
	if err != nil {
		return api.WorkingMemory{}, err
	}
	spec, err := c.Environment()
	if err != nil {
		return api.WorkingMemory{}, err
	}
	return api.WorkingMemory{Agent: c.ID(), Bytes: len(b), Limit: spec.WorkingMaxBytes(),
		Digest: string(digest.FromBytes(b)), Text: string(b)}, nil
}

func printWorkingMemory(w io.Writer, m api.WorkingMemory, asJSON bool) error {
	if asJSON {
		return printJSON(w, m)
	}
	_, err := io.WriteString(w, m.Text)
	return err
}
