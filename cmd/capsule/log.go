package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/journal/logfile"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

func init() { addCommand(newLogCmd) }

type logFlags struct {
	json   bool
	follow bool
	kinds  []string
}

func newLogCmd() *cobra.Command {
	var f logFlags
	cmd := &cobra.Command{
		Use:   "log PATH",
		Short: "Show, verify, append to and merge an agent's journal",
		Long: `Show the journal of a capsule (PATH is a capsule folder) or a journal file
(PATH ends in .jsonl) as a timeline in total order: wall time, machine, Lamport
clock, holder epoch, kind and a one-line summary. Wall times are informational;
the order is (clock, machine, seq).`,
		Example: `  capsule log ./agent                  # readable timeline
  capsule log ./agent --kind tool_call --kind tool_result
  capsule log ./agent --json | jq .body # the raw lines
  capsule log ./agent --follow          # keep printing new events (Ctrl-C stops)
  capsule log verify ./agent
  capsule log append ./agent --kind user --body '{"text":"hello"}'
  capsule log merge ./copy-a ./copy-b -o merged.jsonl
  capsule log apply ./copy-a merged.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runLog(cmd, args[0], f) },
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print the raw journal lines (JSONL)")
	cmd.Flags().BoolVarP(&f.follow, "follow", "f", false, "keep printing events as they are appended")
	cmd.Flags().StringSliceVar(&f.kinds, "kind", nil, "show only events of this kind (repeatable or comma-separated)")
	cmd.AddCommand(newLogVerifyCmd(), newLogAppendCmd(), newLogMergeCmd(), newLogApplyCmd())
	return cmd
}

// journalPath resolves a capsule folder to its journal file; anything else
// is taken as a journal file.
func journalPath(p string) (path string, isCapsule bool, err error) {
	info, err := os.Stat(p)
	if err != nil {
		return "", false, err
	}
	if !info.IsDir() {
		return p, false, nil
	}
	if _, err := os.Stat(filepath.Join(p, manifest.FileName)); err != nil {
		return "", false, usageError{fmt.Errorf("%s is a folder without %s: not a capsule", p, manifest.FileName)}
	}
	if err := capsule.CheckReadable(vfs.OS{}, p); err != nil { // versions first (FORMAT §11.4)
		return "", true, verifyError{err}
	}
	return filepath.Join(p, filepath.FromSlash(manifest.JournalPath)), true, nil
}

func runLog(cmd *cobra.Command, target string, f logFlags) error {
	defer boundHeap(streamingHeap)()
	path, isCapsule, err := journalPath(target)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<16)
	defer out.Flush()
	p := newPrinter(out, cmd.OutOrStdout(), f)
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return err
	}
	// Stream the journal as it is now: memory stays bounded however long
	// it is, and the lines are formatted on every core.
	probs, err := journal.ScanText(io.LimitReader(file, info.Size()), p.format, func(_ *journal.Event, _ int, line []byte) {
		out.Write(line)
	})
	if err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if isCapsule {
		probs = append(committedProblems(target, file), probs...)
	}
	if len(probs) > 0 {
		return logProblems(cmd.ErrOrStderr(), path, probs)
	}
	if !f.follow {
		return nil
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	return follow(ctx, path, wholeLines(file, info.Size()), p, 200*time.Millisecond)
}

// maxShown bounds the problems `capsule log` prints: a file that is not a
// journal at all has one per line.
const maxShown = 10

// logProblems prints the journal's problems (the first maxShown of them)
// and returns the verification error: the timeline above them is not to be
// trusted.
func logProblems(w io.Writer, path string, probs []journal.Problem) error {
	for i, p := range probs {
		if i == maxShown {
			fmt.Fprintf(w, "... and %d more\n", len(probs)-maxShown)
			break
		}
		fmt.Fprintf(w, "%s:%s\n", path, p)
	}
	if looksLikeArchive(path) {
		fmt.Fprintf(w, "%s looks like a capsule archive: verify it (capsule verify) or import it (capsule import) and show the folder's journal\n", path)
	}
	return verifyError{fmt.Errorf("journal %s: %d problem(s); run capsule log verify", path, len(probs))}
}

// looksLikeArchive reports whether path is named or starts like a tar or
// a zstd stream.
func looksLikeArchive(path string) bool {
	if strings.HasSuffix(path, ".tar") || strings.HasSuffix(path, ".tar.zst") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	return bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}) || n >= 262 && string(head[257:262]) == "ustar"
}

// wholeLines is the length of the file's first size bytes without an
// unfinished last line: where following starts.
func wholeLines(file *os.File, size int64) int64 {
	start := max(0, size-journal.MaxLine-1)
	tail := make([]byte, size-start)
	if _, err := file.ReadAt(tail, start); err != nil && err != io.EOF {
		return size
	}
	if i := bytes.LastIndexByte(tail, '\n'); i >= 0 {
		return start + int64(i) + 1
	}
	return start
}

// follow polls the journal for whole new lines and prints them until ctx
// ends. A journal that shrinks (rewritten by a merge) is read again from the
// start, printing only events not printed while following.
func follow(ctx context.Context, path string, off int64, p *printer, every time.Duration) error {
	seen := map[string]bool{}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		next, err := readNew(path, off, p, seen)
		if err != nil {
			return err
		}
		off = next
	}
}

// readNew prints the whole lines after off and returns the new offset.
func readNew(path string, off int64, p *printer, seen map[string]bool) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return off, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return off, err
	}
	if info.Size() < off {
		off, p.rewritten = 0, true // rewritten: start over, printing only unseen events
	}
	chunk := make([]byte, info.Size()-off)
	if _, err := f.ReadAt(chunk, off); err != nil && err != io.EOF {
		return off, err
	}
	end := bytes.LastIndexByte(chunk, '\n') + 1
	for _, line := range bytes.Split(chunk[:end], []byte{'\n'}) {
		if len(line) > 0 {
			p.printLine(line, seen)
		}
	}
	return off + int64(end), p.flush()
}

func (p *printer) printLine(line []byte, seen map[string]bool) {
	e, err := journal.ParseLine(line)
	if err != nil {
		fmt.Fprintf(os.Stderr, "capsule: warning: skipping a line that does not parse: %v\n", err)
		return
	}
	if p.rewritten && seen[e.ID] {
		return
	}
	seen[e.ID] = true
	p.print(&e)
}

// ---- capsule log verify ----

func newLogVerifyCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify PATH",
		Short: "Check every id, per-machine hash chain, clock, epoch and the total order",
		Long: `Check a journal (FORMAT §7.4): every line is canonical JSON whose id is the
hash of its content; for every machine, seq runs 1, 2, 3... and each prev is
the id of the machine's previous event; clocks strictly increase and epochs
never decrease along each machine's chain; the lines are in total order
(clock, machine, seq). For a capsule folder it also checks that the committed
prefix matches the manifest's journal record. Every problem is reported with
its line and machine.`,
		Example: `  capsule log verify ./agent
  capsule log verify ./agent/memory/timeline_events.jsonl --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runLogVerify(cmd, args[0], asJSON) },
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

type verifyReport struct {
	Path        string            `json:"path"`
	OK          bool              `json:"ok"`
	Events      int               `json:"events"`
	Machines    int               `json:"machines"`
	Problems    []journal.Problem `json:"problems"`
	Quarantined []string          `json:"quarantined,omitempty"`
}

func runLogVerify(cmd *cobra.Command, target string, asJSON bool) error {
	defer boundHeap(streamingHeap)()
	path, isCapsule, err := journalPath(target)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rep := verifyReport{Path: path, Quarantined: quarantineFiles(path)}
	machines := map[string]bool{}
	last := ""
	probs, err := journal.Scan(f, func(e *journal.Event, _ int) {
		rep.Events++
		if e.Machine != last { // a machine writes its events in runs
			machines[e.Machine], last = true, e.Machine
		}
	})
	if err != nil {
		return err
	}
	if isCapsule {
		probs = append(committedProblems(target, f), probs...)
	}
	rep.Machines, rep.Problems, rep.OK = len(machines), probs, len(probs) == 0
	if rep.Problems == nil {
		rep.Problems = []journal.Problem{}
	}
	printVerifyReport(cmd.OutOrStdout(), rep, asJSON)
	if !rep.OK {
		return verifyError{fmt.Errorf("journal %s: %d problem(s)", path, len(probs))}
	}
	return nil
}

// committedProblems compares the start of the journal with the manifest's
// record of the committed journal.
func committedProblems(dir string, f *os.File) []journal.Problem {
	c, err := capsule.Open(vfs.OS{}, dir, capsule.Config{})
	if err != nil {
		return []journal.Problem{{Code: journal.CodeCommitted, Msg: err.Error()}}
	}
	j := c.Manifest().Journal
	got, n, err := digest.FromReader(io.NewSectionReader(f, 0, j.Bytes))
	switch {
	case err != nil:
		return []journal.Problem{{Code: journal.CodeCommitted, Msg: err.Error()}}
	case n < j.Bytes:
		return []journal.Problem{{Code: journal.CodeCommitted, Msg: fmt.Sprintf("the journal has %d bytes, the manifest committed %d", n, j.Bytes)}}
	case got != j.Digest:
		return []journal.Problem{{Code: journal.CodeCommitted, Msg: fmt.Sprintf("the committed %d bytes hash to %s, the manifest says %s", j.Bytes, got, j.Digest)}}
	}
	return nil
}

func quarantineFiles(path string) []string {
	matches, _ := filepath.Glob(path + logfile.QuarantineSuffix + "*")
	return matches
}

func printVerifyReport(w io.Writer, rep verifyReport, asJSON bool) {
	if asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "%s:%s\n", rep.Path, p)
	}
	for _, q := range rep.Quarantined {
		fmt.Fprintf(w, "note: %s holds a torn line moved out of the journal after a crash\n", q)
	}
	if rep.OK {
		fmt.Fprintf(w, "ok: %d events from %d machine(s) verify\n", rep.Events, rep.Machines)
	} else {
		fmt.Fprintf(w, "FAILED: %d problem(s) in %d events\n", len(rep.Problems), rep.Events)
	}
}

// ---- capsule log append ----

type appendFlags struct {
	kind, body, machine, wallTime string
	epoch                         uint64
	unknown, asJSON               bool
}

func newLogAppendCmd() *cobra.Command {
	var f appendFlags
	cmd := &cobra.Command{
		Use:   "append PATH --kind KIND --body JSON",
		Short: "Append one event durably (for scripts, tests and other runtimes)",
		Long: `Append one event to a journal and return once it is on disk. The event is
written by this machine: its ID is kept in $CAPSULE_CONFIG_DIR/machine-id
(default: the user's config directory, capsule/machine-id), created on first
use. On a capsule folder the event is written under the holder epoch from
manifest.json, and the manifest's journal record is committed afterwards.
The body is checked against the kind's schema (FORMAT §7.5). Kinds:
instruction, user, assistant, reasoning, tool_call, tool_result,
model_change, usage, frozen, resumed, moved, epoch.`,
		Example: `  capsule log append ./agent --kind user --body '{"text":"hello"}'
  capsule log append ./agent --kind instruction --body '{"role":"system","text":"Be brief."}'
  capsule log append j.jsonl --kind frozen --body '{"reason":"maintenance"}' --machine test-1 --epoch 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runLogAppend(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kind, "kind", "", "the event's kind (required)")
	fl.StringVar(&f.body, "body", "", "the event's body, a JSON object (required; - reads it from stdin)")
	fl.StringVar(&f.machine, "machine", "", "write as this machine instead of this host's machine ID (for tests)")
	fl.StringVar(&f.wallTime, "time", "", "wall time to record, RFC 3339 UTC (default: now)")
	fl.Uint64Var(&f.epoch, "epoch", 0, "holder epoch, for a journal file outside a capsule")
	fl.BoolVar(&f.unknown, "allow-unknown-kind", false, "accept a kind this release does not know")
	fl.BoolVar(&f.asJSON, "json", false, "print the appended line")
	_ = cmd.MarkFlagRequired("kind")
	_ = cmd.MarkFlagRequired("body")
	return cmd
}

func runLogAppend(cmd *cobra.Command, target string, f appendFlags) error {
	path, isCapsule, err := journalPath(target)
	if errors.Is(err, fs.ErrNotExist) && strings.HasSuffix(target, ".jsonl") {
		path, err = target, nil // a new journal file
	}
	if err != nil {
		return err
	}
	body, err := appendBody(cmd, f)
	if err != nil {
		return err
	}
	machine, err := machineFor(f.machine)
	if err != nil {
		return err
	}
	wallTime := f.wallTime
	if wallTime == "" {
		wallTime = time.Now().UTC().Format(time.RFC3339Nano)
	}
	if !journal.ValidTime(wallTime) {
		return usageError{fmt.Errorf("--time %q is not RFC 3339 UTC (2006-01-02T15:04:05Z)", wallTime)}
	}
	var e journal.Event
	if isCapsule {
		e, err = appendToCapsule(target, machine, journal.Kind(f.kind), wallTime, body)
	} else {
		e, err = appendToFile(path, machine, journal.Kind(f.kind), f.epoch, wallTime, body)
	}
	if errors.Is(err, journal.ErrInvalid) || errors.Is(err, logfile.ErrShort) {
		return verifyError{err} // a damaged journal: nothing was appended
	}
	if err != nil {
		return err
	}
	if f.asJSON {
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n", journal.Encode(e))
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "appended %s seq %d clock %d epoch %d %s\n", e.Kind, e.Seq, e.Clock, e.Epoch, e.ID)
	}
	return nil
}

// appendBody reads and checks the body before anything is opened.
func appendBody(cmd *cobra.Command, f appendFlags) ([]byte, error) {
	body := []byte(f.body)
	if f.body == "-" {
		var err error
		if body, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), journal.MaxLine+1)); err != nil {
			return nil, err
		}
	}
	kind := journal.Kind(f.kind)
	if !kind.Known() && !f.unknown {
		return nil, usageError{fmt.Errorf("unknown kind %q (known: %v; --allow-unknown-kind to write it anyway)", f.kind, journal.KnownKinds)}
	}
	if err := journal.ValidateBody(kind, body); err != nil {
		return nil, usageError{err}
	}
	return body, nil
}

func appendToFile(path, machine string, kind journal.Kind, epoch uint64, wallTime string, body []byte) (journal.Event, error) {
	l, err := logfile.Open(logfile.Config{Path: path, Epoch: epoch})
	if err != nil {
		return journal.Event{}, err
	}
	reportQuarantine(l)
	e, err := l.Append(machine, kind, epoch, wallTime, json.RawMessage(body))
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	return e, err
}

// appendToCapsule appends under the holder epoch, then commits the new
// journal record in the manifest (journal before manifest: FORMAT §4).
func appendToCapsule(dir, machine string, kind journal.Kind, wallTime string, body []byte) (journal.Event, error) {
	if err := capsule.CheckHost(vfs.OS{}, dir); err != nil { // refused before the journal is touched
		return journal.Event{}, err
	}
	c, err := capsule.Open(vfs.OS{}, dir, capsule.Config{Writer: manifest.Writer{Release: release, Commit: buildCommit()}})
	if err != nil {
		return journal.Event{}, err
	}
	m := c.Manifest()
	l, err := logfile.Open(logfile.Config{
		Path:      filepath.Join(dir, filepath.FromSlash(manifest.JournalPath)),
		Epoch:     m.Holder.Epoch,
		Committed: m.Journal.Bytes,
	})
	if err != nil {
		return journal.Event{}, err
	}
	defer l.Close()
	reportQuarantine(l)
	e, err := l.Append(machine, kind, m.Holder.Epoch, wallTime, json.RawMessage(body))
	if err != nil {
		return journal.Event{}, err
	}
	rec := manifestJournal(l.Summary())
	if err := c.Commit(func(tx *capsule.Tx) error { return tx.SetJournal(rec) }); err != nil {
		return e, fmt.Errorf("the event is durable in the journal, but the manifest was not updated: %w", err)
	}
	return e, nil
}

// manifestJournal converts a journal summary into the manifest's record.
func manifestJournal(s journal.Summary) manifest.Journal {
	j := manifest.Journal{Events: s.Events, Bytes: s.Bytes, Digest: s.Digest, Heads: map[string]manifest.Head{}}
	for m, h := range s.Heads {
		j.Heads[m] = manifest.Head(h)
	}
	return j
}

// JournalTailCheck is the capsule.VerifyOptions.JournalTail hook: it checks
// the uncommitted tail of a capsule's journal by chain, continuing from the
// manifest's committed heads (FORMAT §7.7).
func JournalTailCheck(tail io.Reader, committed manifest.Journal) []capsule.Problem {
	s := journal.Summary{Events: committed.Events, Bytes: committed.Bytes, Digest: committed.Digest, Heads: map[string]journal.Head{}}
	for m, h := range committed.Heads {
		s.Heads[m] = journal.Head(h)
	}
	probs, err := journal.VerifyTail(s, tail)
	if err != nil {
		return []capsule.Problem{{Path: manifest.JournalPath, Kind: capsule.KindIO, Detail: err.Error()}}
	}
	out := make([]capsule.Problem, 0, len(probs))
	for _, p := range probs {
		out = append(out, capsule.Problem{Path: manifest.JournalPath, Kind: capsule.KindJournal, Detail: p.String()})
	}
	return out
}

func reportQuarantine(l *logfile.Log) {
	for _, q := range l.Quarantined() {
		fmt.Fprintf(os.Stderr, "capsule: recovered from an interrupted append: line %d (%d bytes, %s) moved to %s\n", q.Line, q.Bytes, q.Reason, q.Path)
	}
}

// ---- machine ID ----

// machineFor returns the machine to write as: the override, or this host's
// machine ID, created once in the config directory.
func machineFor(override string) (string, error) {
	if override != "" {
		return override, nil
	}
	dir, err := configDir()
	if err != nil {
		return "", err
	}
	return loadMachineID(filepath.Join(dir, "machine-id"))
}

// configDir is $CAPSULE_CONFIG_DIR, or capsule/ in the user's config directory.
func configDir() (string, error) {
	if d := os.Getenv("CAPSULE_CONFIG_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config directory (set CAPSULE_CONFIG_DIR): %w", err)
	}
	return filepath.Join(d, "capsule"), nil
}

// loadMachineID reads the machine ID, creating it on first use. Creation is
// atomic and happens once even with racing processes: the ID is written to
// a temporary file, synced, and hard-linked into place, which fails if
// another process got there first; then everyone reads the winner's ID.
func loadMachineID(path string) (string, error) {
	if id, err := readMachineID(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	if err := vfs.MkdirAllDurable(vfs.OS{}, filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	tmp := path + ".tmp-" + newMachineID()
	if err := vfs.WriteFile(vfs.OS{}, tmp, []byte(newMachineID()+"\n"), 0o644); err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create machine id: %w", err)
	}
	if err := (vfs.OS{}).SyncDir(filepath.Dir(path)); err != nil {
		return "", err
	}
	return readMachineID(path)
}

func readMachineID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" || len(id) > 256 || strings.ContainsAny(id, "\x00\r\n\t") {
		return "", fmt.Errorf("machine id in %s is not valid; remove the file to make a new one", path)
	}
	return id, nil
}

// newMachineID is "m" and 26 base32 characters of 128 random bits.
func newMachineID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "m" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// ---- capsule log merge ----

func newLogMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge A B -o OUT",
		Short: "Merge two copies of a journal by set union",
		Long: `Merge two journals that diverged (A and B: capsule folders or .jsonl files)
into OUT, a journal file written atomically: the set union of their events by
id, verified and in total order (FORMAT §7.9). Both inputs must verify. Two
different events at one (machine, seq) are a fork: the merge names both and
writes nothing.`,
		Example: `  capsule log merge ./laptop-copy ./server-copy -o merged.jsonl
  capsule log merge a.jsonl b.jsonl -o merged.jsonl && capsule log verify merged.jsonl`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return runLogMerge(cmd, args[0], args[1], out) },
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the merged journal file to write (required)")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

func runLogMerge(cmd *cobra.Command, a, b, out string) error {
	defer boundHeap(streamingHeap)()
	if info, err := os.Stat(out); err == nil && info.IsDir() {
		return usageError{fmt.Errorf("-o %s is a folder; give a journal file name", out)}
	}
	fa, err := openVerified(a)
	if err != nil {
		return err
	}
	defer fa.Close()
	fb, err := openVerified(b)
	if err != nil {
		return err
	}
	defer fb.Close()
	// Stream the union into the atomic writer: a fork or a union that does
	// not verify fails the stream, and nothing is written.
	pr, pw := io.Pipe()
	var st journal.MergeStats
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		var err error
		if st, err = journal.MergeTo(bw, fa, fb, fa.size, fb.size); err == nil {
			err = bw.Flush()
		}
		if err != nil {
			err = verifyError{fmt.Errorf("merge %s and %s: %w", a, b, err)}
		}
		pw.CloseWithError(err)
	}()
	err = vfs.WriteFileFrom(vfs.OS{}, out, pr, 0o644)
	pr.CloseWithError(err) // stops the merge if the write failed first
	if err != nil {
		var ve verifyError
		if errors.As(err, &ve) {
			return ve
		}
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "merged %d + %d events into %d (%s)\n", st.A, st.B, st.Out, out)
	return nil
}

// verifiedFile is an open journal file that verified, and its size.
type verifiedFile struct {
	*os.File
	size int64
}

// openVerified opens a journal (capsule folder or file) and checks it as it
// streams by; one that does not verify is refused.
func openVerified(target string) (*verifiedFile, error) {
	path, _, err := journalPath(target)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil {
		var probs []journal.Problem
		if probs, err = journal.Scan(io.NewSectionReader(f, 0, info.Size()), nil); err == nil && len(probs) > 0 {
			err = verifyError{fmt.Errorf("%s does not verify: %w", path, &journal.VerifyError{Problems: probs})}
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &verifiedFile{File: f, size: info.Size()}, nil
}

// readVerified reads a journal that must verify.
func readVerified(target string) ([]journal.Event, error) {
	path, _, err := journalPath(target)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events, probs, err := journal.Check(f)
	if err != nil {
		return nil, err
	}
	if len(probs) > 0 {
		return nil, verifyError{fmt.Errorf("%s does not verify: %w", path, &journal.VerifyError{Problems: probs})}
	}
	return events, nil
}
