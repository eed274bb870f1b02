package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/progress"
	"github.com/agentcapsule/capsule/vfs"
)

func init() { addCommand(newVerifyCmd) }

type verifyFlags struct {
	sig     sigFlags
	workers int
	quiet   bool
	json    bool
}

func newVerifyCmd() *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify PATH",
		Short: "Check every byte of a capsule folder or archive offline; report every problem",
		Long: `Verify checks PATH, a capsule folder or a .capsule.tar[.zst] archive, without
network: the manifest's structure and schema versions; the sha256 and size of
every file it lists; the committed journal by digest and any uncommitted tail
by its hash chain; every blob's content against its name; every reference of
the workspace snapshot; the environment spec and its secret rules; files the
layout does not allow; and manifest.json.sig when present.

It reports EVERY problem, one line each ("path: kind: detail"), not only the
first. Warnings (a temporary file left by a crash, an unreferenced blob) do
not fail verification.

With --allowed-signers FILE --identity ID a signature by an allowed signer is
required (OpenSSH allowed_signers format, as for "ssh-keygen -Y verify").`,
		Example: `  capsule verify ./agent
  capsule verify ./agent --json | jq '.problems[]'
  capsule verify agent.capsule.tar.zst --allowed-signers ~/.ssh/allowed_signers --identity you@example.com`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runVerify(cmd, args[0], f) },
	}
	f.sig.register(cmd)
	cmd.Flags().IntVar(&f.workers, "workers", 0, "files hashed at once (default: one per CPU)")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress bar")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the report as JSON")
	return cmd
}

func runVerify(cmd *cobra.Command, path string, f verifyFlags) error {
	defer boundHeap(fileHeapLimit)()
	trust, err := f.sig.trust()
	if err != nil {
		return err
	}
	if isArchivePath(path) {
		return runVerifyArchive(cmd, path, trust, f.json, f.quiet)
	}
	bar := progress.New(os.Stderr, "verify", -1, f.quiet)
	bar.Closing("checking references")
	rep, err := capsule.Verify(vfs.OS{}, path, capsule.VerifyOptions{
		JournalTail: JournalTailCheck,
		Signature:   signatureCheck(trust),
		Progress:    bar,
		Workers:     f.workers,
	})
	bar.Finish()
	if err != nil {
		return err
	}
	if p := unsignedProblem(path, trust); p != nil {
		rep.Problems = append(rep.Problems, *p)
	}
	printCapsuleReport(cmd.OutOrStdout(), path, rep, f.json)
	if !rep.OK() {
		return verifyError{fmt.Errorf("verify %s: %d problem(s)", path, len(rep.Problems))}
	}
	return nil
}

// printCapsuleReport prints one line per problem and warning and a summary,
// or the whole report as JSON.
func printCapsuleReport(w io.Writer, path string, rep *capsule.Report, asJSON bool) {
	if asJSON {
		_ = printJSON(w, struct {
			Path string `json:"path"`
			OK   bool   `json:"ok"`
			*capsule.Report
		}{path, rep.OK(), rep})
		return
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(w, p)
	}
	for _, p := range rep.Warnings {
		fmt.Fprintln(w, "warning: "+p.String())
	}
	status := "ok"
	if !rep.OK() {
		status = fmt.Sprintf("%d problem(s)", len(rep.Problems))
	}
	fmt.Fprintf(w, "%s: %s (%d files, %d blobs, %s hashed", path, status, rep.Files, rep.Blobs, humanBytes(rep.Bytes))
	if len(rep.Warnings) > 0 {
		fmt.Fprintf(w, ", %d warning(s)", len(rep.Warnings))
	}
	fmt.Fprintln(w, ")")
}
