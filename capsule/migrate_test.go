package capsule

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/fixtures"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

const fixtures010 = "../testdata/fixtures/0.1.0"

// restoreFixture copies a capsule fixture of release 0.1.0 into a
// temporary folder from its listing (fixtures.Restore).
func restoreFixture(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := fixtures.Restore(filepath.Join(fixtures010, "capsules", name), filepath.Join(fixtures010, "expect", name, "folder.txt"), dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// folderHash lists every entry below dir with the digest of each file.
func folderHash(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			lines = append(lines, "dir "+rel)
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		lines = append(lines, "file "+rel+" "+hex.EncodeToString(sum[:]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func fixtureNames(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(fixtures010, "capsules"))
	if err != nil || len(ents) == 0 {
		t.Fatalf("no 0.1.0 capsule fixtures: %v", err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

var migrateCfg = Config{Writer: manifest.Writer{Release: schema.Release, Commit: "test"}}

// FORMAT §11.4, §11.5: every 0.1.0 fixture migrates up (verifying, with
// the originals of destructive steps kept and never pruned) and back down
// to exactly the bytes 0.1.0 wrote.
func TestMigrateFixturesUpAndBack(t *testing.T) {
	for _, name := range fixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			dir := restoreFixture(t, name)
			before := folderHash(t, dir)
			res, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{Verify: &VerifyOptions{}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Changes) != 2 || res.Manifest != "rewritten" || len(res.Kept) < 2 {
				t.Fatalf("result %+v", res)
			}
			c, err := Open(vfs.OS{}, dir, migrateCfg)
			if err != nil {
				t.Fatal(err)
			}
			m := c.Manifest()
			if m.Schemas[schema.Environment] != 2 || m.Schemas[schema.MemoryIndex] != 2 || m.Schemas[schema.Journal] != 1 {
				t.Fatalf("schemas %v", m.Schemas)
			}
			if s, err := c.Environment(); err != nil || s.Version != 2 {
				t.Fatalf("environment: %v", err)
			}
			rep, err := Verify(vfs.OS{}, dir, VerifyOptions{})
			if err != nil || !rep.OK() || len(rep.Warnings) != 0 {
				t.Fatalf("verify after migrate: %v %+v", err, rep)
			}
			if n, _, err := c.PruneBlobs(nil); err != nil || n != 0 {
				t.Fatalf("prune removed %d blobs (%v): the originals must stay", n, err)
			}
			if res, err := c.GC(); err != nil || res.Removed != 0 {
				t.Fatalf("gc: %+v %v: the originals must stay", res, err)
			}
			again, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{})
			if err != nil || len(again.Changes) != 0 {
				t.Fatalf("second migrate: %+v %v", again, err)
			}
			back, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{To: "0.1.0"})
			if err != nil {
				t.Fatal(err)
			}
			if back.Manifest != "restored" {
				t.Errorf("manifest %s, want restored", back.Manifest)
			}
			if got := folderHash(t, dir); got != before {
				t.Errorf("rollback is not what 0.1.0 wrote:\n%s\nwant\n%s", got, before)
			}
		})
	}
}

// A migration's original is checked by Verify like any referenced blob.
func TestVerifyReportsAMissingOriginal(t *testing.T) {
	dir := restoreFixture(t, "conversation")
	res, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var idx Original
	for _, o := range res.Kept {
		if o.Kind == schema.MemoryIndex {
			idx = o
		}
	}
	if err := os.Remove(filepath.Join(dir, "artifacts", "blobs", idx.Digest.Hex())); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(vfs.OS{}, dir, VerifyOptions{})
	if err != nil || rep.OK() || !strings.Contains(rep.Problems[0].Detail, "the original of memory/vector_index/index.json") {
		t.Fatalf("%v %+v", err, rep)
	}
}

// A dry run checks every step and writes nothing.
func TestMigrateDryRunWritesNothing(t *testing.T) {
	for _, to := range []string{"", "0.1.0"} {
		dir := restoreFixture(t, "conversation")
		if to != "" {
			if _, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		before := folderHash(t, dir)
		res, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{To: to, DryRun: true})
		if err != nil || len(res.Changes) != 2 || !res.DryRun {
			t.Fatalf("to %q: %+v %v", to, res, err)
		}
		if got := folderHash(t, dir); got != before {
			t.Errorf("to %q: a dry run wrote", to)
		}
	}
}

// After a commit made under 0.2.0, a rollback cannot restore the old
// manifest; the files go through the down steps (or their originals when
// unchanged) and the manifest names 0.1.0's versions.
func TestMigrateDownAfterAChange(t *testing.T) {
	dir := restoreFixture(t, "conversation")
	if _, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := Open(vfs.OS{}, dir, migrateCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(func(tx *Tx) error { return tx.SetWorkingMemory([]byte("notes\n")) }); err != nil {
		t.Fatal(err)
	}
	res, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{To: "0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest != "rewritten" {
		t.Errorf("manifest %s, want rewritten", res.Manifest)
	}
	c, err = Open(vfs.OS{}, dir, migrateCfg)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Manifest()
	for _, k := range schema.Kinds {
		if m.Schemas[k] != 1 {
			t.Errorf("%s version %d after the rollback", k, m.Schemas[k])
		}
	}
	if list, _ := Originals(m); len(list) != 0 { // the down step gave 0.1.0's spec back: nothing to keep
		t.Errorf("originals left: %+v", list)
	}
	b, err := c.ReadFile(manifest.EnvironmentPath, envspec.MaxSize)
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(filepath.Join(fixtures010, "capsules", "conversation", "environment", "spec.json"))
	if !bytes.Equal(b, orig) {
		t.Errorf("spec.json after the rollback differs from 0.1.0's")
	}
	if rep, err := Verify(vfs.OS{}, dir, VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// A rollback of a spec that says more than version 1 can keeps the
// version-2 spec as an original, and the next upgrade gives it back byte
// for byte instead of the narrowest migration.
func TestMigrateDownKeepsWhatVersion1CannotSay(t *testing.T) {
	dir := restoreFixture(t, "empty")
	if _, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := Open(vfs.OS{}, dir, migrateCfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Environment()
	if err != nil {
		t.Fatal(err)
	}
	s.Builtins = map[string]envspec.Rule{"run": {Approval: "never"}}
	s.Sandbox.Network, s.Sandbox.Hosts = envspec.NetworkHosts, []string{"api.example:443"}
	if err := c.Commit(func(tx *Tx) error { return tx.SetEnvironment(s) }); err != nil {
		t.Fatal(err)
	}
	v2, err := c.ReadFile(manifest.EnvironmentPath, envspec.MaxSize)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{To: "0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	var kept []Original
	for _, o := range res.Kept {
		if o.Kind == schema.Environment {
			kept = append(kept, o)
		}
	}
	if len(kept) != 1 || kept[0].Version != 2 || kept[0].Digest != digest.FromBytes(v2) {
		t.Fatalf("kept %+v", res.Kept)
	}
	if rep, err := Verify(vfs.OS{}, dir, VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify after the rollback: %v %+v", err, rep)
	}
	if _, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err = Open(vfs.OS{}, dir, migrateCfg)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.ReadFile(manifest.EnvironmentPath, envspec.MaxSize); err != nil || !bytes.Equal(b, v2) {
		t.Errorf("upgrade after the rollback: spec.json is not the kept version-2 spec (%v)", err)
	}
}

// A rollback that version 1 cannot express is refused and writes nothing.
func TestMigrateDownRefusesWhatVersion1CannotSay(t *testing.T) {
	dir := restoreFixture(t, "empty")
	if _, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := Open(vfs.OS{}, dir, migrateCfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Environment()
	if err != nil {
		t.Fatal(err)
	}
	s.Tools = append(s.Tools, envspec.Tool{Name: "search", Transport: "http", URL: "https://mcp.example/search", Effect: "read", Approval: "never"})
	if err := c.Commit(func(tx *Tx) error { return tx.SetEnvironment(s) }); err != nil {
		t.Fatal(err)
	}
	before := folderHash(t, dir)
	_, err = Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{To: "0.1.0"})
	if !errors.Is(err, schema.ErrNotExpressible) || !strings.Contains(err.Error(), `"search"`) {
		t.Fatalf("err = %v, want ErrNotExpressible naming the server", err)
	}
	if got := folderHash(t, dir); got != before {
		t.Error("a refused rollback wrote")
	}
}

// setVersion rewrites the manifest of dir, as text, to claim version v of
// kind k written by release writer, and the file's own version member
// (with its digest and size) where it has one.
func setVersion(t *testing.T, dir string, k schema.Kind, v int, writer string) {
	t.Helper()
	mp := filepath.Join(dir, manifest.FileName)
	b, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`"`+string(k)+`": \d+`).ReplaceAllString(string(b), fmt.Sprintf(`"%s": %d`, k, v))
	text = regexp.MustCompile(`"release": "[^"]*"`).ReplaceAllString(text, `"release": "`+writer+`"`)
	if rel := kindFiles[k]; rel == manifest.EnvironmentPath || rel == manifest.IndexPath {
		fp := filepath.Join(dir, filepath.FromSlash(rel))
		fb, err := os.ReadFile(fp)
		if err != nil {
			t.Fatal(err)
		}
		nb := regexp.MustCompile(`"version": ?\d+`).ReplaceAll(fb, []byte(fmt.Sprintf(`"version": %d`, v)))
		if err := os.WriteFile(fp, nb, 0o644); err != nil {
			t.Fatal(err)
		}
		text = strings.Replace(text, string(digest.FromBytes(fb)), string(digest.FromBytes(nb)), 1)
		text = strings.Replace(text, fmt.Sprintf(`"path": %q,
      "size": %d`, rel, len(fb)), fmt.Sprintf(`"path": %q,
      "size": %d`, rel, len(nb)), 1)
	}
	if err := os.WriteFile(mp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FORMAT §11.4: a version newer than this release reads, or below its
// floor, is refused by every read path of the package, naming the kind,
// the version, the writer and the release that reads it, and no byte of
// the folder changes, not even by the recovery Open runs.
func TestReadPathsRefuseAndWriteNothing(t *testing.T) {
	cases := []struct {
		kind   schema.Kind
		v      int
		writer string
		want   string
	}{
		{schema.Environment, 3, "0.4.0", "environment schema version 3 (written by 0.4.0) is newer than release " + schema.Release + " reads (1 to 2): read it with release 0.4.0 or later; nothing was written"},
		{schema.MemoryIndex, 0, "0.1.0", "schemas.memory_index: is 0, versions start at 1"}, // below every floor: the manifest is malformed
		{schema.Journal, 3, "0.4.0", "journal schema version 3 (written by 0.4.0) is newer than release " + schema.Release + " reads (1 to 2): read it with release 0.4.0 or later"},
	}
	for _, tc := range cases {
		t.Run(string(tc.kind), func(t *testing.T) {
			dir := restoreFixture(t, "conversation")
			setVersion(t, dir, tc.kind, tc.v, tc.writer)
			// an interrupted commit that Open would otherwise roll back
			if err := os.MkdirAll(filepath.Join(dir, PendingDir), 0o755); err != nil {
				t.Fatal(err)
			}
			before := folderHash(t, dir)
			check := func(what string, err error) {
				t.Helper()
				if err == nil || !errors.Is(err, ErrRefused) && tc.v > 0 || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %v, want %q", what, err, tc.want)
				}
			}
			_, err := Open(vfs.OS{}, dir, migrateCfg)
			check("open", err)
			_, err = Inspect(vfs.OS{}, dir)
			check("inspect", err)
			check("check", CheckReadable(vfs.OS{}, dir))
			_, err = Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{})
			check("migrate", err)
			_, err = Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{To: "0.1.0"})
			check("migrate --to 0.1.0", err)
			rep, err := Verify(vfs.OS{}, dir, VerifyOptions{})
			if err != nil || rep.OK() || !strings.Contains(rep.Problems[0].String(), tc.want) {
				t.Errorf("verify: %v %+v", err, rep)
			}
			if got := folderHash(t, dir); got != before {
				t.Errorf("a refusal wrote:\n%s\nwant\n%s", got, before)
			}
		})
	}
}

// The stale index a new capsule holds is what the up step makes of 0.1.0's
// placeholder, and new capsules are written at this release's versions.
func TestNewCapsuleIsCurrent(t *testing.T) {
	up, err := schema.Up(schema.MemoryIndex, 1, 2, []byte("{\"version\": 1, \"entries\": []}\n"))
	if err != nil || string(up) != EmptyIndex {
		t.Fatalf("up step gives %q (%v), a new capsule holds %q", up, err, EmptyIndex)
	}
	fsys := vfs.NewMem()
	c, err := Init(fsys, "/c", InitConfig{Config: migrateCfg})
	if err != nil {
		t.Fatal(err)
	}
	m := c.Manifest()
	if m.Schemas[schema.Environment] != 2 || m.Schemas[schema.MemoryIndex] != 2 {
		t.Fatalf("schemas %v", m.Schemas)
	}
	b, err := c.ReadFile(manifest.EnvironmentPath, envspec.MaxSize)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := envspec.ReadVersion(b); v != 2 {
		t.Fatalf("spec version %d", v)
	}
	if err := envspec.CheckV2(b); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(fsys, "/c", VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("%v %+v", err, rep)
	}
}

// The refusal of a version below the floor names the release that wrote
// that version, which reads it (the registry's floors are all 1 in this
// release, so the message is checked on its own).
func TestRefusedErrorBelowTheFloor(t *testing.T) {
	e := &RefusedError{Kind: schema.Environment, Got: 1, Writer: "0.1.0", Floor: 2, Max: 3}
	want := "environment schema version 1 (written by 0.1.0) is below the floor of release " + schema.Release +
		" (it reads 2 to 3): read it with release 0.1.0, or migrate it with that release first; nothing was written"
	if e.Error() != want || !errors.Is(e, ErrRefused) || !errors.Is(e, manifest.ErrUnsupported) {
		t.Fatalf("%q\nwant %q", e.Error(), want)
	}
}

// PlanUp is what a reader (a node opening an agent, a move's target) asks
// first: the kinds that migrate, with their steps, or the refusal.
func TestPlanUp(t *testing.T) {
	dir := restoreFixture(t, "conversation")
	c, err := Open(vfs.OS{}, dir, migrateCfg)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := PlanUp(c.Manifest())
	if err != nil || len(plans) != 2 || plans[0].Kind != schema.MemoryIndex || !plans[0].Destructive ||
		plans[1].Kind != schema.Environment || plans[1].Destructive || plans[1].Path != manifest.EnvironmentPath || len(plans[1].Steps) != 1 {
		t.Fatalf("plans %+v, %v", plans, err)
	}
	if _, err := Migrate(vfs.OS{}, dir, migrateCfg, MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err = Open(vfs.OS{}, dir, migrateCfg)
	if err != nil {
		t.Fatal(err)
	}
	if plans, err := PlanUp(c.Manifest()); err != nil || len(plans) != 0 {
		t.Fatalf("after migrate: %+v, %v", plans, err)
	}
	m := c.Manifest()
	m.Schemas[schema.Environment] = 3
	if _, err := PlanUp(m); !errors.Is(err, ErrRefused) {
		t.Fatalf("newer: %v", err)
	}
}
