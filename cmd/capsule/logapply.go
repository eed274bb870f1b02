package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

// ---- capsule log apply ----

func newLogApplyCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "apply DIR MERGED.jsonl",
		Short: "Make a merged journal the journal of a capsule folder",
		Long: `Apply replaces the journal of the capsule DIR with MERGED.jsonl, the output of
"capsule log merge", and commits the manifest's journal record. MERGED must
verify, hold every event of DIR's journal (every machine's committed head
among them) and carry no event under an epoch above DIR's holder epoch;
otherwise nothing changes. The new journal is written atomically, then the
manifest is committed. If the two steps are interrupted, run the same
command again: it recognises the journal it wrote and completes the commit.
Like every commit it is refused while another writer (a node) holds DIR.`,
		Example: `  capsule log merge laptop/ server/ -o merged.jsonl
  capsule log apply laptop/ merged.jsonl
  capsule log apply server/ merged.jsonl   # both copies now hold the union`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := runLogApply(args[0], args[1])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s now holds %d events (%d new) from %s\n", args[0], res.Events, res.Added, args[1])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// applyResult is what `capsule log apply` reports.
type applyResult struct {
	Events int           `json:"events"`
	Added  int           `json:"added"`
	Digest digest.Digest `json:"digest"`
}

func runLogApply(dir, file string) (*applyResult, error) {
	if _, _, err := journalPath(dir); err != nil {
		return nil, err
	}
	merged, err := readVerified(file)
	if err != nil {
		return nil, err
	}
	c, err := capsule.Open(vfs.OS{}, dir, writerConfig())
	if err != nil {
		return nil, err
	}
	data := encodeJournal(merged)
	old, err := currentEvents(c, data)
	if err != nil {
		return nil, err
	}
	if err := checkSuperset(c.Manifest(), old, merged, file); err != nil {
		return nil, err
	}
	rec := journalRecord(merged, data)
	path := filepath.Join(dir, filepath.FromSlash(manifest.JournalPath))
	err = c.Commit(func(tx *capsule.Tx) error {
		if err := vfs.WriteFile(vfs.OS{}, path, data, 0o644); err != nil {
			return err
		}
		return tx.SetJournal(rec)
	})
	if err != nil {
		return nil, err
	}
	return &applyResult{Events: len(merged), Added: len(merged) - len(old), Digest: rec.Digest}, nil
}

// currentEvents returns the events of the capsule's journal, which must
// verify and match the manifest's committed record. A journal that is
// byte for byte the merged one is an apply interrupted before its commit:
// its events are taken as they are, and the heads check decides.
func currentEvents(c *capsule.Capsule, mergedData []byte) ([]journal.Event, error) {
	path := filepath.Join(c.Dir(), filepath.FromSlash(manifest.JournalPath))
	cur, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	events, probs, err := journal.Check(bytes.NewReader(cur))
	if err != nil {
		return nil, err
	}
	if bytes.Equal(cur, mergedData) && len(probs) == 0 {
		return events, nil
	}
	j := c.Manifest().Journal
	if int64(len(cur)) < j.Bytes || digest.FromBytes(cur[:j.Bytes]) != j.Digest {
		probs = append(probs, journal.Problem{Code: journal.CodeCommitted, Msg: "the committed prefix does not match the manifest"})
	}
	if len(probs) > 0 {
		return nil, verifyError{fmt.Errorf("%s does not verify: %w", path, &journal.VerifyError{Problems: probs})}
	}
	return events, nil
}

// checkSuperset refuses a merged journal that lacks an event of the
// capsule's journal or a committed head, or carries a future epoch.
func checkSuperset(m *manifest.Manifest, old, merged []journal.Event, file string) error {
	have := make(map[string]bool, len(merged))
	for _, e := range merged {
		have[e.ID] = true
		if e.Epoch > m.Holder.Epoch {
			return verifyError{fmt.Errorf("%s: event %s is under epoch %d, above the capsule's holder epoch %d", file, short(e.ID), e.Epoch, m.Holder.Epoch)}
		}
	}
	missing := map[string]bool{}
	for _, e := range old {
		if !have[e.ID] {
			missing[e.ID] = true
		}
	}
	for _, h := range m.Journal.Heads {
		if !have[h.ID] {
			missing[h.ID] = true
		}
	}
	if len(missing) > 0 {
		return verifyError{fmt.Errorf("%s lacks %d event(s) of the capsule's journal: merge the capsule into it first (capsule log merge)", file, len(missing))}
	}
	return nil
}

func encodeJournal(events []journal.Event) []byte {
	var buf bytes.Buffer
	for i := range events {
		buf.Write(journal.Encode(events[i]))
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// journalRecord is the manifest's record of a journal of these events, whose
// encoding is data.
func journalRecord(events []journal.Event, data []byte) manifest.Journal {
	j := manifest.Journal{Events: int64(len(events)), Bytes: int64(len(data)), Digest: digest.FromBytes(data), Heads: map[string]manifest.Head{}}
	for _, e := range events {
		if h, ok := j.Heads[e.Machine]; !ok || e.Seq > h.Seq {
			j.Heads[e.Machine] = manifest.Head{Seq: e.Seq, ID: e.ID, Clock: e.Clock, Epoch: e.Epoch}
		}
	}
	return j
}
