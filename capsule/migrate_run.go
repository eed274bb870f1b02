package capsule

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// MigrateOptions says where Migrate takes a capsule.
type MigrateOptions struct {
	// To is the release whose versions to write: "" or schema.Release for
	// this one, or an earlier release (docs/RELEASES.md) for a rollback.
	To string
	// DryRun plans and checks every step but writes nothing.
	DryRun bool
	// Verify, when set, verifies the capsule with these options before
	// anything is written; a capsule with problems is refused (a
	// *VerifyError). Each converted file is checked either way.
	Verify *VerifyOptions
}

// KindChange is what Migrate did (or would do) to one kind.
type KindChange struct {
	KindPlan
	// How is "steps" (converted by the schema steps) or "original" (the
	// bytes an earlier release wrote, restored from the kept blob).
	How string `json:"how"`
}

// MigrateResult reports a migration.
type MigrateResult struct {
	Dir     string       `json:"dir"`
	Release string       `json:"release"`      // the release whose versions the capsule now has
	From    string       `json:"from_release"` // the writer the manifest named before
	DryRun  bool         `json:"dry_run"`
	Changes []KindChange `json:"changes"`
	// Kept lists the originals this migration stored (FORMAT §11.5).
	Kept []Original `json:"kept"`
	// Manifest is "rewritten", "restored" (the exact bytes the target
	// release wrote) or "unchanged".
	Manifest string `json:"manifest"`
	// Removed counts the original blobs a rollback no longer needed.
	Removed int `json:"removed_blobs"`
}

// Migrate converts the capsule in dir in place, atomically, to the schema
// versions release opts.To writes (FORMAT §11.4, §11.5). Up, each older
// file is converted by the schema steps, checked, and staged; a
// destructive step keeps the original bytes as a blob listed in the
// manifest, and the first migration away from a release keeps that
// release's manifest too; one commit (manifest last) makes it all visible.
// Down, each file whose kept original still matches what the migration
// wrote is restored byte for byte, the rest go through the down steps, and
// when nothing else changed since, the old manifest is restored exactly. A
// refusal (a version this release does not read, or a down step that cannot
// express the state) writes nothing.
func Migrate(fsys vfs.FS, dir string, cfg Config, opts MigrateOptions) (*MigrateResult, error) {
	if err := CheckReadable(fsys, dir); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	target, err := releaseVersions(opts.To)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if opts.Verify != nil {
		rep, err := Verify(fsys, dir, *opts.Verify)
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		if err := rep.Err(); err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
	}
	c, err := Open(fsys, dir, cfg)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	release := opts.To
	if release == "" {
		release = schema.Release
	}
	r := &MigrateResult{Dir: dir, Release: release, DryRun: opts.DryRun, Changes: []KindChange{}, Kept: []Original{}, Manifest: "unchanged"}
	mg := &migration{c: c, r: r, target: target, release: release, dry: opts.DryRun}
	if err := c.commitRaw(mg.run); err != nil && !errors.Is(err, errDryRun) && !errors.Is(err, errNoChange) {
		return nil, err
	}
	if opts.DryRun || len(r.Changes) == 0 {
		return r, nil
	}
	if err := mg.restoreSignature(); err != nil {
		return r, fmt.Errorf("migrate: restore %s: %w", manifest.SignatureName, err)
	}
	if err := mg.removeDropped(); err != nil {
		return r, fmt.Errorf("migrate: %w", err)
	}
	return r, nil
}

// migration is one run of Migrate.
type migration struct {
	c       *Capsule
	r       *MigrateResult
	target  map[schema.Kind]int
	release string
	dry     bool
	old     []byte // the manifest's bytes before the migration
	dropped []Original

	sig      *Original // the kept signature of the manifest a rollback restores
	sigBytes []byte    // its bytes, written back after the commit
}

// keepSignature keeps manifest.json.sig, which the commit removes (a
// signature covers the exact manifest bytes it was made for), so that a
// rollback that restores those bytes restores it too.
func (mg *migration) keepSignature(tx *Tx, writer string) ([]Original, error) {
	b, err := readLimited(mg.c.fsys, mg.c.path(manifest.SignatureName), maxSignatureSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !mg.dry {
		if _, _, err := tx.PutBlob(bytes.NewReader(b)); err != nil {
			return nil, err
		}
	}
	return []Original{{Kind: schema.Manifest, Version: tx.m.Format, Path: manifest.SignatureName, Writer: writer,
		Digest: digest.FromBytes(b), Size: int64(len(b))}}, nil
}

// takeSignature removes the kept signature of the target release's
// manifest from list, remembering it for restoreSignature.
func (mg *migration) takeSignature(list []Original) []Original {
	out := list[:0:0]
	for _, o := range list {
		if o.Kind == schema.Manifest && o.Path == manifest.SignatureName && o.Writer == mg.release {
			o := o
			mg.sig = &o
			mg.dropped = append(mg.dropped, o)
			continue
		}
		out = append(out, o)
	}
	return out
}

// restoreSignature writes back the signature of a restored manifest.
func (mg *migration) restoreSignature() error {
	if mg.sigBytes == nil {
		return nil
	}
	if err := vfs.WriteFile(mg.c.fsys, mg.c.path(manifest.SignatureName), mg.sigBytes, filePerm); err != nil {
		return err
	}
	return mg.c.fsys.SyncDir(mg.c.dir)
}

// errDryRun ends a dry run's commit function so that nothing is committed.
var errDryRun = errors.New("capsule: dry run")

func (mg *migration) run(tx *Tx) ([]byte, error) {
	old, err := readLimited(mg.c.fsys, mg.c.path(manifest.FileName), manifest.MaxSize)
	if err != nil {
		return nil, err
	}
	mg.old = old
	mg.r.From = tx.m.Writer.Release
	orig, err := Originals(tx.m)
	if err != nil {
		return nil, err
	}
	for _, k := range schema.Kinds {
		from, to := schemaVersion(tx.m, k), mg.target[k]
		if from == to || k == schema.Journal && from < to {
			continue // journal lines keep their version (FORMAT §11.6)
		}
		if k == schema.Journal {
			ch, err := mg.journalDown(tx, from, to)
			if err != nil {
				return nil, fmt.Errorf("migrate: %s version %d to %d: %w", k, from, to, err)
			}
			mg.r.Changes = append(mg.r.Changes, ch)
			continue
		}
		ch, kept, err := mg.kind(tx, k, from, to, &orig)
		if err != nil {
			return nil, fmt.Errorf("migrate: %s version %d to %d: %w", k, from, to, err)
		}
		mg.r.Changes = append(mg.r.Changes, ch)
		mg.r.Kept = append(mg.r.Kept, kept...)
	}
	if len(mg.r.Changes) == 0 {
		return nil, errNoChange
	}
	raw, err := mg.finishManifest(tx, &orig)
	if err != nil {
		return nil, err
	}
	if mg.dry {
		return nil, errDryRun
	}
	return raw, nil
}

// errNoChange ends the commit function of a capsule already at the target.
var errNoChange = errors.New("capsule: nothing to migrate")

// kind converts one kind from version from to version to on tx.
func (mg *migration) kind(tx *Tx, k schema.Kind, from, to int, orig *[]Original) (KindChange, []Original, error) {
	ch := KindChange{KindPlan: KindPlan{Kind: k, Path: kindFiles[k], From: from, To: to}, How: "steps"}
	steps, err := stepsBetween(k, from, to)
	if err != nil {
		return ch, nil, err
	}
	for _, s := range steps {
		ch.Steps = append(ch.Steps, s.Summary)
		ch.Destructive = ch.Destructive || s.Destructive
	}
	if ch.Path == "" { // the journal: lines keep their version (FORMAT §11.6)
		return ch, nil, fmt.Errorf("%w: no file of %s to convert", schema.ErrNoPath, k)
	}
	cur, err := tx.c.ReadFile(ch.Path, MaxSnapshotSize)
	if err != nil {
		return ch, nil, err
	}
	out, kept, err := mg.convertFile(tx, &ch, cur, orig)
	if err != nil {
		return ch, nil, err
	}
	if err := checkConverted(k, to, out); err != nil {
		return ch, nil, err
	}
	tx.m.Schemas[k] = to
	if mg.dry { // describe the file the commit would stage, stage nothing
		tx.m.SetFile(manifest.File{Path: ch.Path, Size: int64(len(out)), Digest: digest.FromBytes(out)})
		return ch, kept, nil
	}
	return ch, kept, tx.SetFile(ch.Path, bytes.NewReader(out))
}

// convertFile gives the bytes of ch's file at version ch.To: the kept
// original the file still matches, else the steps' output, keeping the
// input when a destructive step loses something of it.
func (mg *migration) convertFile(tx *Tx, ch *KindChange, cur []byte, orig *[]Original) ([]byte, []Original, error) {
	restored, ok, err := mg.restore(tx, ch.Path, ch.To, cur, orig)
	if err != nil || ok {
		if ok {
			ch.How = "original"
		}
		return restored, nil, err
	}
	out, err := convert(ch.Kind, ch.From, ch.To, cur)
	if err != nil {
		return nil, nil, err
	}
	if !ch.Destructive || ch.To < ch.From && givesBack(ch.Kind, ch.To, ch.From, out, cur) {
		return out, nil, nil
	}
	kept, err := mg.keep(tx, *ch, cur, out)
	return out, kept, err
}

func stepsBetween(k schema.Kind, from, to int) ([]schema.Step, error) {
	if to < from {
		return schema.DownSteps(k, from, to)
	}
	return schema.Steps(k, from, to)
}

func convert(k schema.Kind, from, to int, b []byte) ([]byte, error) {
	if to < from {
		return schema.Down(k, from, to, b)
	}
	return schema.Up(k, from, to, b)
}

// givesBack reports whether converting out from version from back to
// version to gives cur: then a destructive down step lost nothing of this
// input (a spec 0.1.0 could have written) and keeps no original. An up
// step that is destructive always keeps one (FORMAT §11.5).
func givesBack(k schema.Kind, from, to int, out, cur []byte) bool {
	back, err := convert(k, from, to, out)
	return err == nil && bytes.Equal(back, cur)
}

// keep stores cur, which a destructive step replaces by out, as an original.
func (mg *migration) keep(tx *Tx, ch KindChange, cur, out []byte) ([]Original, error) {
	o := Original{Kind: ch.Kind, Version: ch.From, Path: ch.Path, Writer: tx.m.Writer.Release,
		Digest: digest.FromBytes(cur), Size: int64(len(cur)), Migrated: digest.FromBytes(out)}
	if !mg.dry {
		if _, _, err := tx.PutBlob(bytes.NewReader(cur)); err != nil {
			return nil, err
		}
	}
	return []Original{o}, nil
}

// restore returns the kept original of path at version to when the file is
// still what the migration that kept it wrote (cur). Originals of path at
// versions from to on are consumed either way: the file is about to be
// rewritten at version to.
func (mg *migration) restore(tx *Tx, path string, to int, cur []byte, orig *[]Original) ([]byte, bool, error) {
	keep := (*orig)[:0:0]
	var found *Original
	for i, o := range *orig {
		if o.Path != path || o.Kind == schema.Manifest {
			keep = append(keep, o)
			continue
		}
		if o.Version == to && o.Migrated == digest.FromBytes(cur) {
			found = &(*orig)[i]
		}
		mg.dropped = append(mg.dropped, o)
	}
	*orig = keep
	if found == nil {
		return nil, false, nil
	}
	b, err := readBlob(tx.c, found.Digest)
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

func readBlob(c *Capsule, d digest.Digest) ([]byte, error) {
	rc, err := c.blobs.Open(d)
	if err != nil {
		return nil, fmt.Errorf("original %s: %w", d.Short(), err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxSnapshotSize+1))
	if err != nil {
		return nil, fmt.Errorf("original %s: %w", d.Short(), err)
	}
	return b, nil
}

// checkConverted verifies a converted file before it is staged: it must be
// a valid record of version v of its kind.
func checkConverted(k schema.Kind, v int, b []byte) error {
	switch k {
	case schema.Environment:
		got, err := envspec.ReadVersion(b)
		if err != nil {
			return err
		}
		if got != v {
			return fmt.Errorf("%w: converted spec has version %d, want %d", schema.ErrInput, got, v)
		}
		_, err = envspec.Parse(b)
		return err
	case schema.MemoryIndex:
		return schema.CheckIndex(b, v)
	}
	return nil
}

// finishManifest keeps the old manifest on the way up, and on the way down
// returns its exact bytes when nothing changed since the migration.
func (mg *migration) finishManifest(tx *Tx, orig *[]Original) ([]byte, error) {
	up := false
	for _, ch := range mg.r.Changes {
		up = up || ch.To > ch.From
	}
	if up {
		mg.r.Manifest = "rewritten"
		list := append(append([]Original{}, *orig...), mg.r.Kept...)
		if w := tx.m.Writer.Release; !hasManifestOriginal(list, w) {
			o := Original{Kind: schema.Manifest, Version: tx.m.Format, Path: manifest.FileName, Writer: w,
				Digest: digest.FromBytes(mg.old), Size: int64(len(mg.old))}
			if !mg.dry {
				if _, _, err := tx.PutBlob(bytes.NewReader(mg.old)); err != nil {
					return nil, err
				}
			}
			list = append(list, o)
			mg.r.Kept = append(mg.r.Kept, o)
			sig, err := mg.keepSignature(tx, w)
			if err != nil {
				return nil, err
			}
			list = append(list, sig...)
			mg.r.Kept = append(mg.r.Kept, sig...)
		}
		return nil, setOriginals(tx.m, dedupe(list))
	}
	mg.r.Manifest = "rewritten"
	*orig = append(mg.takeSignature(*orig), mg.r.Kept...)
	for i, o := range *orig {
		if o.Kind != schema.Manifest || o.Writer != mg.release || o.Path != manifest.FileName {
			continue
		}
		b, err := readBlob(tx.c, o.Digest)
		if err != nil {
			return nil, err
		}
		rest := append(append([]Original{}, (*orig)[:i]...), (*orig)[i+1:]...)
		mg.dropped = append(mg.dropped, o)
		old, err := manifest.Parse(b)
		if err == nil && sameState(old, tx.m) && len(rest) == 0 {
			mg.r.Manifest = "restored"
			if mg.sig != nil {
				if mg.sigBytes, err = readBlob(tx.c, mg.sig.Digest); err != nil {
					return nil, err
				}
			}
			return b, nil
		}
		*orig = rest
		break
	}
	return nil, setOriginals(tx.m, dedupe(*orig))
}

func hasManifestOriginal(list []Original, writer string) bool {
	for _, o := range list {
		if o.Kind == schema.Manifest && o.Writer == writer {
			return true
		}
	}
	return false
}

// dedupe drops repeated entries, keeping the first.
func dedupe(list []Original) []Original {
	seen := map[Original]bool{}
	out := list[:0:0]
	for _, o := range list {
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out
}

// sameState reports whether the manifest a rollback builds describes the
// same state as the one the earlier release wrote: identity, holder,
// versions, journal and every file.
func sameState(old, now *manifest.Manifest) bool {
	return reflect.DeepEqual(old.Agent, now.Agent) && old.Holder == now.Holder && reflect.DeepEqual(old.Schemas, now.Schemas) &&
		reflect.DeepEqual(old.Journal, now.Journal) && reflect.DeepEqual(old.Files, now.Files)
}

// removeDropped removes the blobs of originals a rollback consumed, unless
// the snapshot or another original still references them.
func (mg *migration) removeDropped() error {
	if len(mg.dropped) == 0 {
		return nil
	}
	s, err := mg.c.Snapshot()
	if err != nil {
		return err
	}
	refs := s.Blobs()
	still := originalBlobs(mg.c.Manifest())
	for _, o := range mg.dropped {
		if _, ok := refs[o.Digest]; ok {
			continue
		}
		if _, ok := still[o.Digest]; ok {
			continue
		}
		if has, _ := mg.c.blobs.Has(o.Digest); !has {
			continue
		}
		if err := mg.c.blobs.Remove(o.Digest); err != nil {
			return err
		}
		mg.r.Removed++
	}
	return nil
}
