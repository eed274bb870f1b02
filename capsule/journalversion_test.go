package capsule

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// appendAndCommit appends events of the given kinds at this release's
// version to the capsule's journal and commits it.
func appendAndCommit(t *testing.T, dir string, kinds ...journal.Kind) *manifest.Manifest {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(manifest.JournalPath))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	events, err := journal.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriter("m9", events...)
	for _, k := range kinds {
		body := any(journal.Resumed{Reason: "test"})
		if k == "approval" {
			body = []byte(`{"by":"op","call_id":"1","decision":"approved","request":"sha256:` + strings.Repeat("0", 64) + `"}`)
		}
		e, err := w.Next(k, 1, "", body)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	var buf bytes.Buffer
	for _, e := range events {
		buf.Write(journal.Encode(e))
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(vfs.OS{}, dir, migrateCfg)
	if err != nil {
		t.Fatal(err)
	}
	s := journal.Summarize(events)
	j := manifest.Journal{Events: s.Events, Bytes: s.Bytes, Digest: s.Digest, Heads: map[string]manifest.Head{}}
	for m, h := range s.Heads {
		j.Heads[m] = manifest.Head{Seq: h.Seq, ID: h.ID, Clock: h.Clock, Epoch: h.Epoch}
	}
	if err := c.Commit(func(tx *Tx) error { return tx.SetJournal(j) }); err != nil {
		t.Fatal(err)
	}
	return c.Manifest()
}

// FORMAT §11.6: schemas.journal is the highest v among the committed lines:
// a 0.1.0 journal stays 1 when migrated, becomes 2 with the first line this
// release commits, and a rollback to a release that reads version 1 records
// 1 again, the lines unchanged, when every line reads as version 1.
func TestJournalVersionIsTheHighestCommitted(t *testing.T) {
	dir := restoreFixture(t, "conversation")
	if _, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := Open(vfs.OS{}, dir, migrateCfg)
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Manifest().Schemas[schema.Journal]; v != 1 {
		t.Fatalf("migrated 0.1.0 journal: version %d, want 1", v)
	}
	m := appendAndCommit(t, dir, journal.KindResumed)
	if v := m.Schemas[schema.Journal]; v != 2 {
		t.Fatalf("after a version-2 line: version %d, want 2", v)
	}
	before, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(manifest.JournalPath)))
	res, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{To: "0.2.0"})
	if err != nil {
		t.Fatal(err)
	}
	c, err = Open(vfs.OS{}, dir, migrateCfg)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(manifest.JournalPath)))
	if v := c.Manifest().Schemas[schema.Journal]; v != 1 || !bytes.Equal(before, after) {
		t.Fatalf("rolled back to 0.2.0: journal version %d (want 1), journal unchanged %v; %+v", v, bytes.Equal(before, after), res)
	}
	m = appendAndCommit(t, dir, journal.KindResumed)
	if v := m.Schemas[schema.Journal]; v != 2 {
		t.Errorf("a commit after the rollback: version %d, want 2", v)
	}
}

// FORMAT §11.7.3: a journal holding a line of a version-2 kind is never
// handed down to version 1; the rollback is refused and writes nothing.
func TestJournalDownRefusesAVersion2Kind(t *testing.T) {
	dir := restoreFixture(t, "conversation")
	if _, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	appendAndCommit(t, dir, "approval")
	before := folderHash(t, dir)
	_, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{To: "0.2.0"})
	if !errors.Is(err, schema.ErrNotExpressible) || !strings.Contains(err.Error(), "approval") {
		t.Fatalf("migrate --to 0.2.0: %v, want a refusal naming the approval", err)
	}
	if got := folderHash(t, dir); got != before {
		t.Errorf("the refusal wrote:\n%s", got)
	}
}

// An empty journal records version 1, which every release reads.
func TestEmptyJournalIsVersion1(t *testing.T) {
	c, err := Init(vfs.OS{}, filepath.Join(t.TempDir(), "c"), InitConfig{Config: migrateCfg, ID: "01JE0000000000000000000009", Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Manifest().Schemas[schema.Journal]; v != 1 {
		t.Errorf("new capsule: journal version %d, want 1", v)
	}
}
