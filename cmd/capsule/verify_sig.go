package main

// Signature and archive checks for `capsule verify` (verify.go) and for
// import and export. Call sites:
//
//   - verify.go registers the signature flags with sigFlags.register and
//     reads them with sigFlags.trust.
//   - For a folder PATH: signatureCheck(trust) is the
//     capsule.VerifyOptions.Signature hook, and unsignedProblem(PATH, trust)
//     is added to the report (capsule.Verify does not require a signature).
//   - For a file PATH (isArchivePath): runVerifyArchive prints the report
//     and returns verifyError when there is a problem.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/archive"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/progress"
	"github.com/agentcapsule/capsule/signature"
	"github.com/agentcapsule/capsule/vfs"
)

// sigFlags are --allowed-signers and --identity.
type sigFlags struct {
	allowedSigners string
	identity       string
}

func (f *sigFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.allowedSigners, "allowed-signers", "", "require a manifest.json.sig by a signer this OpenSSH allowed_signers file lists")
	cmd.Flags().StringVar(&f.identity, "identity", "", "with --allowed-signers: the principal the signer must be allowed as")
}

// trust reads the allowed_signers file; both flags or neither must be given.
func (f sigFlags) trust() (archive.Trust, error) {
	switch {
	case f.allowedSigners == "" && f.identity == "":
		return archive.Trust{}, nil
	case f.allowedSigners == "" || f.identity == "":
		return archive.Trust{}, usageError{errors.New("--allowed-signers and --identity go together")}
	}
	// A file that is missing or does not parse is exit 3, as a signing
	// key for --sign is: the command was called right, the file is wrong.
	b, err := os.ReadFile(f.allowedSigners)
	if err != nil {
		return archive.Trust{}, fmt.Errorf("--allowed-signers: %w", err)
	}
	if _, err := signature.ParseAllowedSigners(bytes.NewReader(b)); err != nil {
		return archive.Trust{}, fmt.Errorf("--allowed-signers %s: %w", f.allowedSigners, err)
	}
	return archive.Trust{AllowedSigners: b, Identity: f.identity}, nil
}

// signatureCheck is the capsule.VerifyOptions.Signature hook: with allowed
// signers it checks trust (ssh-keygen -Y verify semantics), without them
// only that the signature matches the manifest under its own key.
func signatureCheck(t archive.Trust) func(manifest, sig []byte) error {
	return func(m, sig []byte) error {
		if t.AllowedSigners == nil {
			_, err := signature.Check(m, sig)
			return err
		}
		now := t.Now
		if now.IsZero() {
			now = time.Now()
		}
		return signature.VerifyAt(m, sig, bytes.NewReader(t.AllowedSigners), t.Identity, now)
	}
}

// unsignedProblem is the problem of a folder without manifest.json.sig when
// allowed signers were given, or nil.
func unsignedProblem(dir string, t archive.Trust) *capsule.Problem {
	if t.AllowedSigners == nil {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(dir, archive.SignatureName)); err == nil {
		return nil
	}
	return &capsule.Problem{Path: archive.SignatureName, Kind: capsule.KindSignature, Detail: "the capsule is not signed, but --allowed-signers was given"}
}

// isArchivePath reports whether PATH is a file (an archive to verify) rather
// than a capsule folder.
func isArchivePath(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

// archiveVerifyOptions are the capsule.VerifyOptions import, export
// --verify and archive verification use: the same checks as `capsule verify
// DIR`, journal tail included. The signature is checked by the archive
// package itself (with trust), so Signature stays nil here.
func archiveVerifyOptions() capsule.VerifyOptions {
	return capsule.VerifyOptions{JournalTail: JournalTailCheck}
}

// capsuleVerifier adapts capsule.Verify to archive.Verifier; it shows its
// own progress bar for the hashing pass, after ending the bar of the
// unpacking (outer, which may be nil), whose work is done by then.
func capsuleVerifier(opts capsule.VerifyOptions, quiet bool, outer *progress.Bar) archive.Verifier {
	return func(fsys vfs.FS, dir string) ([]archive.Problem, error) {
		outer.Finish()
		bar := progress.New(os.Stderr, "verify", -1, quiet)
		bar.Closing("checking references")
		defer bar.Finish()
		if opts.Progress == nil {
			opts.Progress = bar
		}
		rep, err := capsule.Verify(fsys, dir, opts)
		if err != nil {
			return nil, err
		}
		out := make([]archive.Problem, 0, len(rep.Problems))
		for _, p := range rep.Problems {
			out = append(out, archive.Problem{Path: p.Path, Kind: string(p.Kind), Detail: p.Detail})
		}
		return out, nil
	}
}

// runVerifyArchive is `capsule verify FILE` for a .capsule.tar[.zst]: it
// unpacks the archive into a temporary folder, verifies it like a folder
// plus every tar-level rule of import, checks the signature, prints every
// problem and returns verifyError if there is one.
func runVerifyArchive(cmd *cobra.Command, path string, t archive.Trust, asJSON, quiet bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	bar := progress.New(os.Stderr, "unpack", size, quiet)
	bar.Closing("finishing the unpack")
	rep, err := archive.VerifyReader(vfs.OS{}, bar.Reader(f), archive.VerifyConfig{
		Verify: capsuleVerifier(archiveVerifyOptions(), quiet, bar),
		Trust:  t,
	})
	bar.Finish()
	if err != nil {
		return fmt.Errorf("verify %s: %w", path, err)
	}
	printArchiveReport(cmd.OutOrStdout(), path, rep, asJSON)
	if !rep.OK() {
		return verifyError{fmt.Errorf("verify %s: %d problem(s)", path, len(rep.Problems))}
	}
	return nil
}

func printArchiveReport(w io.Writer, path string, rep *archive.Report, asJSON bool) {
	if asJSON {
		_ = printJSON(w, struct {
			Path string `json:"path"`
			OK   bool   `json:"ok"`
			*archive.Report
		}{path, rep.OK(), rep})
		return
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(w, p)
	}
	status := "ok"
	if !rep.OK() {
		status = fmt.Sprintf("%d problem(s)", len(rep.Problems))
	}
	fmt.Fprintf(w, "%s: %s (%d files, %s, %s)\n", path, status, rep.Files, humanBytes(rep.Bytes), rep.Compression)
	switch st := rep.Signature; {
	case st.Trusted:
		fmt.Fprintf(w, "signed by %s, an allowed signer\n", st.Signer)
	case st.Signer != "":
		fmt.Fprintf(w, "signed by %s (not checked against allowed signers)\n", st.Signer)
	}
}
