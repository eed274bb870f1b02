package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/term"

	"github.com/agentcapsule/capsule/archive"
	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/progress"
	"github.com/agentcapsule/capsule/signature"
	"github.com/agentcapsule/capsule/vfs"
)

func init() { addCommand(newExportCmd) }

// passphraseEnv names the environment variable export reads an encrypted
// signing key's passphrase from when it is set (FORMAT §10.1).
const passphraseEnv = "CAPSULE_SIGN_PASSPHRASE"

type exportFlags struct {
	out       string
	zstd      bool
	sign      string
	signAgent bool
	keyFP     string
	verify    bool
	noVerify  bool
	quiet     bool
	json      bool
}

func newExportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export DIR -o FILE.capsule.tar[.zst]",
		Short: "Write a capsule folder as a deterministic tar, optionally zstd-compressed and signed",
		Long: `Export writes the capsule folder DIR as one tar file that GNU tar reads:
entries at the root of the tar (manifest.json, memory/..., artifacts/...,
environment/...), sorted by name, with fixed metadata (mtime 0, uid/gid 0, no
user names, modes 0644/0755). The same capsule always gives the same bytes.

An output name ending in .zst (or --zstd) compresses with zstd. "-o -" writes
to standard output.

--sign KEYFILE signs the exact manifest.json bytes with an SSH private key
(ed25519, RSA or ECDSA) and adds manifest.json.sig next to it in the tar, in
the format of "ssh-keygen -Y sign -n capsule". For a passphrase-protected key
the passphrase comes from $CAPSULE_SIGN_PASSPHRASE if set, otherwise it is
asked on the terminal. --sign-agent signs with a key of the running ssh-agent
($SSH_AUTH_SOCK): the one whose fingerprint --sign-key-fingerprint gives, or
the agent's first key. The folder itself never keeps a signature.

Export verifies first: it checks the whole folder (as "capsule verify DIR")
and compares every file it exports against the manifest while streaming, so
a capsule that fails verification is never exported (exit 1, nothing
written). This reads the folder twice; --no-verify skips both checks.`,
		Example: `  capsule export ./agent -o agent.capsule.tar
  capsule export ./agent -o agent.capsule.tar.zst --sign ~/.ssh/id_ed25519
  capsule export ./agent -o agent.capsule.tar --sign-agent --sign-key-fingerprint SHA256:abc...
  capsule export ./agent -o - | ssh other-host capsule import - -o ./agent
  tar tf agent.capsule.tar                     # list it with GNU tar
  ssh-keygen -Y verify -f allowed_signers -I you@example.com -n capsule \
      -s <(tar xOf agent.capsule.tar manifest.json.sig) < <(tar xOf agent.capsule.tar manifest.json)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runExport(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "output", "o", "", "the archive to write (.capsule.tar or .capsule.tar.zst; - for stdout)")
	fl.BoolVar(&f.zstd, "zstd", false, "compress with zstd (implied by an output name ending in .zst)")
	fl.StringVar(&f.sign, "sign", "", "sign the manifest with this SSH private key file")
	fl.BoolVar(&f.signAgent, "sign-agent", false, "sign the manifest with a key of ssh-agent ($SSH_AUTH_SOCK)")
	fl.StringVar(&f.keyFP, "sign-key-fingerprint", "", "with --sign-agent: the key's SHA256 fingerprint (default: the agent's first key)")
	fl.BoolVar(&f.verify, "verify", true, "verify the folder first and every exported file against the manifest (the default)")
	fl.BoolVar(&f.noVerify, "no-verify", false, "export without verifying (a damaged capsule is exported as it is)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress bar")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

// exportReport is what export prints.
type exportReport struct {
	Dir         string `json:"dir"`
	Output      string `json:"output"`
	Compression string `json:"compression"`
	Signer      string `json:"signer,omitempty"`
	*archive.ExportResult
}

func runExport(cmd *cobra.Command, dir string, f exportFlags) error {
	defer boundHeap(fileHeapLimit)()
	if err := checkExportFlags(f); err != nil {
		return err
	}
	if f.noVerify {
		f.verify = false
	}
	if err := checkExportSource(dir); err != nil {
		return err
	}
	signer, closeSigner, err := loadSigner(f)
	if err != nil {
		return err
	}
	defer closeSigner()
	if f.verify {
		if err := verifyBeforeExport(cmd, dir, f.quiet); err != nil {
			return err
		}
	}
	cfg := exportConfig(f, signer)
	bar := progress.New(os.Stderr, "export", -1, f.quiet)
	bar.Closing("syncing the archive to disk")
	cfg.Progress = bar
	ctx, stop := interruptible(cmd)
	defer stop()
	cfg.Context = ctx
	var res *archive.ExportResult
	if f.out == "-" {
		res, err = archive.Export(vfs.OS{}, dir, os.Stdout, cfg)
	} else {
		res, err = archive.ExportFile(vfs.OS{}, dir, f.out, cfg)
	}
	bar.Finish()
	if ctx.Err() != nil && f.out == "-" {
		return fmt.Errorf("export %s: interrupted; standard output holds a partial archive", dir)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("export %s: interrupted; the partial archive was removed", dir)
	}
	if err != nil {
		return err
	}
	rep := exportReport{Dir: dir, Output: f.out, Compression: cfg.Compression.String(), ExportResult: res}
	if signer != nil {
		rep.Signer = signature.Fingerprint(signer.PublicKey())
	}
	out := cmd.OutOrStdout()
	if f.out == "-" { // the archive owns standard output
		out = cmd.ErrOrStderr()
	}
	return printExport(out, rep, f.json)
}

func checkExportFlags(f exportFlags) error {
	switch {
	case f.sign != "" && f.signAgent:
		return usageError{errors.New("--sign and --sign-agent exclude each other")}
	case f.keyFP != "" && !f.signAgent:
		return usageError{errors.New("--sign-key-fingerprint needs --sign-agent")}
	case f.out == "":
		return usageError{errors.New("-o FILE is required")}
	}
	return nil
}

// checkExportSource refuses a path that does not exist (exit 3), a folder
// that is not a capsule (exit 2) or holds an unfinished commit, whose files
// would be a mix of two states.
func checkExportSource(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, manifest.FileName)); err != nil {
		return usageError{fmt.Errorf("%s is not a capsule folder (no %s)", dir, manifest.FileName)}
	}
	if _, err := os.Lstat(filepath.Join(dir, capsule.PendingDir)); err == nil {
		return fmt.Errorf("export %s: a commit is running or was interrupted (%s exists); wait for it, or let the next command that opens the capsule finish it, then export again", dir, capsule.PendingDir)
	}
	return nil
}

func exportConfig(f exportFlags, signer ssh.Signer) archive.ExportConfig {
	cfg := archive.ExportConfig{Compression: archive.CompressionFor(f.out)}
	if f.zstd {
		cfg.Compression = archive.Zstd
	}
	cfg.Skip = func(name string) bool {
		return name == capsule.PendingDir || strings.HasPrefix(name, capsule.PendingDir+"/")
	}
	if signer != nil {
		cfg.Sign = func(m []byte) ([]byte, error) { return signature.Sign(m, signer) }
	}
	if f.verify {
		var m *manifest.Manifest
		cfg.OnManifest = func(b []byte) (err error) { m, err = manifest.Parse(b); return err }
		cfg.Check = func(name string, size int64, d digest.Digest) error { return checkAgainst(m, name, size, d) }
	}
	return cfg
}

// checkAgainst compares one exported file with the manifest being exported:
// layout files by size and digest, blobs by name, the journal by its
// committed prefix (exactly when there is no uncommitted tail).
func checkAgainst(m *manifest.Manifest, name string, size int64, d digest.Digest) error {
	if fe, ok := m.File(name); ok {
		if fe.Size != size || fe.Digest != d {
			return fmt.Errorf("%s changed: %d bytes %s, the manifest says %d bytes %s", name, size, d.Short(), fe.Size, fe.Digest.Short())
		}
		return nil
	}
	if hx, ok := strings.CutPrefix(name, manifest.BlobsDir+"/"); ok && hx != d.Hex() {
		return fmt.Errorf("blob %s holds content %s", hx, d.Short())
	}
	if name == manifest.JournalPath {
		j := m.Journal
		if size < j.Bytes || (size == j.Bytes && d != j.Digest) {
			return fmt.Errorf("%s does not hold the committed journal (%d bytes %s)", name, j.Bytes, j.Digest.Short())
		}
	}
	return nil
}

// verifyBeforeExport runs the folder verification and prints its problems.
func verifyBeforeExport(cmd *cobra.Command, dir string, quiet bool) error {
	bar := progress.New(os.Stderr, "verify", -1, quiet)
	bar.Closing("checking references")
	opts := archiveVerifyOptions()
	opts.Progress = bar
	rep, err := capsule.Verify(vfs.OS{}, dir, opts)
	bar.Finish()
	if err != nil {
		return err
	}
	if rep.OK() {
		return nil
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(cmd.ErrOrStderr(), p)
	}
	return verifyError{fmt.Errorf("export %s: the capsule has %d problem(s); nothing was written", dir, len(rep.Problems))}
}

// loadSigner returns the signer the flags ask for (nil if none) and a
// function releasing it (the ssh-agent connection).
func loadSigner(f exportFlags) (ssh.Signer, func(), error) {
	switch {
	case f.sign != "":
		pem, err := os.ReadFile(f.sign)
		if err != nil {
			return nil, nil, fmt.Errorf("read signing key: %w", err)
		}
		s, err := signature.ParseKey(pem, func() ([]byte, error) { return readPassphrase(f.sign) })
		if err != nil {
			return nil, nil, fmt.Errorf("signing key %s: %w", f.sign, err)
		}
		return s, func() {}, nil
	case f.signAgent:
		return agentSigner(f.keyFP)
	}
	return nil, func() {}, nil
}

func agentSigner(fingerprint string) (ssh.Signer, func(), error) {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, nil, errors.New("--sign-agent: SSH_AUTH_SOCK is not set (start ssh-agent and ssh-add your key)")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, nil, fmt.Errorf("--sign-agent: %w", err)
	}
	s, err := signature.AgentSigner(agent.NewClient(conn), fingerprint)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return s, func() { conn.Close() }, nil
}

// readPassphrase takes the passphrase from $CAPSULE_SIGN_PASSPHRASE, or
// asks on the controlling terminal. It never echoes or logs it.
func readPassphrase(keyFile string) ([]byte, error) {
	if v, ok := os.LookupEnv(passphraseEnv); ok {
		return []byte(v), nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil || !term.IsTerminal(int(tty.Fd())) {
		if tty != nil {
			tty.Close()
		}
		return nil, fmt.Errorf("%w: set %s or run in a terminal", signature.ErrPassphrase, passphraseEnv)
	}
	defer tty.Close()
	fmt.Fprintf(tty, "Passphrase for %s: ", keyFile)
	pw, err := term.ReadPassword(int(tty.Fd()))
	fmt.Fprintln(tty)
	return pw, err
}

func printExport(w io.Writer, r exportReport, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	kind := "tar"
	if r.Compression == archive.Zstd.String() {
		kind = "tar.zst"
	}
	fmt.Fprintf(w, "exported %s to %s: %d files, %s (%s of %s)\n",
		r.Dir, r.Output, r.Files, humanBytes(r.Bytes), kind, humanBytes(r.Written))
	fmt.Fprintf(w, "manifest %s\n", r.Manifest)
	if r.Signer != "" {
		fmt.Fprintf(w, "signed by %s (namespace %q)\n", r.Signer, signature.Namespace)
	}
	return nil
}
