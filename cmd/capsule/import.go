package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/archive"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/progress"
	"github.com/agentcapsule/capsule/vfs"
)

func init() { addCommand(newImportCmd) }

type importFlags struct {
	out    string
	sig    sigFlags
	limits limitFlags
	quiet  bool
	json   bool
}

func newImportCmd() *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import FILE -o DIR",
		Short: "Unpack a capsule archive into a new folder, refusing anything hostile or unverified",
		Long: `Import unpacks FILE (a .capsule.tar or .capsule.tar.zst; "-" reads standard
input; the compression is recognised from the bytes) into a staging folder
beside DIR, checks every entry, verifies the whole capsule (every digest, the
layout, the journal, the signature if present) and only then renames the
staging folder to DIR. On any problem nothing is left behind: DIR is never
created. DIR must not exist, or be an empty folder; its parent must exist.

Refused: absolute names, ".." components, symbolic and hard links, devices,
fifos and every other non-regular entry, sparse files, duplicate names, names
that differ only by case, and archives beyond the limits below. A staging
folder (".capsule-import-...") left by a crash is removed by the next import
into the same DIR.

With --allowed-signers and --identity the archive must also carry a
manifest.json.sig made by a key the allowed_signers file lists for that
identity (the format of ssh-keygen's ALLOWED SIGNERS).`,
		Example: `  capsule import agent.capsule.tar -o ./agent
  capsule import agent.capsule.tar.zst -o ./agent --allowed-signers ./allowed_signers --identity ops@example.com
  ssh host capsule export ./agent -o - | capsule import - -o ./agent
  capsule import big.capsule.tar -o ./agent --max-total 64GiB --max-entries 5000000`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runImport(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "output", "o", "", "the capsule folder to create")
	f.sig.register(cmd)
	f.limits.register(cmd)
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress bar")
	fl.BoolVar(&f.json, "json", false, "print the result (or the problems) as JSON")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

func runImport(cmd *cobra.Command, file string, f importFlags) error {
	defer boundHeap(fileHeapLimit)()
	trust, err := f.sig.trust()
	if err != nil {
		return err
	}
	limits, err := f.limits.parse()
	if err != nil {
		return err
	}
	in, size, err := openInput(file)
	if err != nil {
		return err
	}
	defer in.Close()
	bar := progress.New(os.Stderr, "import", size, f.quiet)
	bar.Closing("syncing the unpacked files")
	ctx, stop := interruptible(cmd)
	defer stop()
	hashed := archiveVerifyOptions()
	hashed.BlobsHashed = true // the blobs were hashed as they were unpacked
	res, err := archive.Import(vfs.OS{}, bar.Reader(&cancelReader{ctx: ctx, r: in}), f.out, archive.ImportConfig{
		Limits:       limits,
		Verify:       capsuleVerifier(archiveVerifyOptions(), f.quiet, bar),
		VerifyHashed: capsuleVerifier(hashed, f.quiet, bar),
		Trust:        trust,
		Context:      ctx,
	})
	bar.Finish()
	if ctx.Err() != nil {
		return fmt.Errorf("import %s: interrupted; the staging folder was removed and %s not created", file, f.out)
	}
	if err != nil {
		return importError(cmd.OutOrStdout(), file, err, f.json)
	}
	mig, err := capsule.Migrate(vfs.OS{}, res.Dir, writerConfig(), capsule.MigrateOptions{}) // verified just now
	if err != nil {
		return fmt.Errorf("import %s: imported into %s as the archive holds it, then: %w (run capsule migrate %s)", file, res.Dir, err, res.Dir)
	}
	if f.json {
		return printJSON(cmd.OutOrStdout(), struct {
			OK bool `json:"ok"`
			*archive.ImportResult
			Migrated []capsule.KindChange `json:"migrated"`
		}{true, res, mig.Changes})
	}
	fmt.Fprintf(cmd.OutOrStdout(), "imported %s into %s: %d files, %s, verified\n", file, res.Dir, res.Files, humanBytes(res.Bytes))
	for _, c := range mig.Changes {
		fmt.Fprintf(cmd.OutOrStdout(), "migrated %s from version %d to %d (capsule migrate %s --to %s rolls back)\n", c.Kind, c.From, c.To, res.Dir, mig.From)
	}
	if res.Signed {
		fmt.Fprintf(cmd.OutOrStdout(), "signed by %s%s\n", res.Signer, map[bool]string{true: ", an allowed signer", false: " (not checked against allowed signers)"}[res.Trusted])
	}
	return nil
}

// importError maps a failed import to its exit code: a capsule that does
// not verify or an archive refused for its content exits 1 (its problems
// printed), a destination in the way exits 2, anything else 3.
func importError(w io.Writer, file string, err error, asJSON bool) error {
	var ve *archive.VerifyError
	switch {
	case errors.As(err, &ve):
		printProblems(w, ve.Problems, asJSON)
		return verifyError{fmt.Errorf("import %s: %d problem(s); nothing was written", file, len(ve.Problems))}
	case errors.Is(err, archive.ErrDestExists):
		return usageError{err}
	case refusedArchive(err):
		if asJSON {
			printProblems(w, []archive.Problem{{Kind: archive.KindArchive, Detail: err.Error()}}, true)
		}
		return verifyError{fmt.Errorf("%w; nothing was written", err)}
	}
	return err
}

// refusedArchive reports whether err refuses the archive's content.
func refusedArchive(err error) bool {
	for _, s := range []error{archive.ErrUnsafePath, archive.ErrEntryType, archive.ErrDuplicate, archive.ErrCaseCollision,
		archive.ErrConflict, archive.ErrLimit, archive.ErrCorrupt, archive.ErrCompression} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// openInput opens FILE, or standard input for "-", and returns its size if
// known (-1 otherwise) for the progress bar.
func openInput(file string) (io.ReadCloser, int64, error) {
	if file == "-" {
		return io.NopCloser(os.Stdin), -1, nil
	}
	in, err := os.Open(file)
	if err != nil {
		return nil, 0, err
	}
	size := int64(-1)
	if fi, err := in.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return in, size, nil
}

// printProblems prints one line per problem, or a JSON list.
func printProblems(w io.Writer, problems []archive.Problem, asJSON bool) {
	if asJSON {
		_ = printJSON(w, map[string]any{"ok": false, "problems": problems})
		return
	}
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
}

// limitFlags are the import limits of FORMAT §9.3.
type limitFlags struct {
	maxTotal, maxEntrySize string
	maxEntries, maxPathLen int
}

func (l *limitFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&l.maxTotal, "max-total", "16GiB", "refuse archives whose files total more than this")
	fl.StringVar(&l.maxEntrySize, "max-entry-size", "", "refuse a single file larger than this (default: --max-total)")
	fl.IntVar(&l.maxEntries, "max-entries", archive.DefaultMaxEntries, "refuse archives with more entries than this")
	fl.IntVar(&l.maxPathLen, "max-path-len", archive.DefaultMaxPathLen, "refuse entry names longer than this many bytes")
}

func (l limitFlags) parse() (archive.Limits, error) {
	total, err := parseByteSize(l.maxTotal)
	if err != nil {
		return archive.Limits{}, usageError{fmt.Errorf("--max-total: %w", err)}
	}
	var entry int64
	if l.maxEntrySize != "" {
		if entry, err = parseByteSize(l.maxEntrySize); err != nil {
			return archive.Limits{}, usageError{fmt.Errorf("--max-entry-size: %w", err)}
		}
	}
	if l.maxEntries <= 0 || l.maxPathLen <= 0 {
		return archive.Limits{}, usageError{errors.New("--max-entries and --max-path-len must be positive")}
	}
	return archive.Limits{MaxTotal: total, MaxEntrySize: entry, MaxEntries: l.maxEntries, MaxPathLen: l.maxPathLen}, nil
}

// parseByteSize reads "123", "64KiB", "16GiB", "1.5G" (units are powers of
// 1024; "B" and "iB" are optional).
func parseByteSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"", 1}}
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	for _, u := range units {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || v <= 0 || v*u.mult > 1<<62 {
			return 0, fmt.Errorf("%q is not a size like 16GiB", s)
		}
		return int64(v * u.mult), nil
	}
	return 0, fmt.Errorf("%q is not a size like 16GiB", s)
}

// cancelReader returns from a Read as soon as ctx is done, even while the
// read it started still waits (on a pipe that sends nothing), so an
// interrupted import stops at once. The waiting read fills a buffer of its
// own, never the caller's.
type cancelReader struct {
	ctx     context.Context
	r       io.Reader
	pending chan readResult // a read in flight, or nil
	buf     []byte          // the buffer of the reads
}

type readResult struct {
	b   []byte
	err error
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if c.pending == nil {
		ch := make(chan readResult, 1)
		if cap(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		buf := c.buf[:len(p)] // free again once the read is collected
		go func() {
			n, err := c.r.Read(buf)
			ch <- readResult{buf[:n], err}
		}()
		c.pending = ch
	}
	select {
	case res := <-c.pending:
		c.pending = nil
		return copy(p, res.b), res.err
	case <-c.ctx.Done():
		return 0, c.ctx.Err()
	}
}
