package capsule

import (
	"encoding/json"

	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
)

// checkIndex checks the memory index's version against the manifest and
// reads it as this release does: an older version through the steps, in
// memory (FORMAT §11.4, §11.7.2).
func (v *verifier) checkIndex() {
	rel := manifest.IndexPath
	b, ok := v.readWhole(rel, MaxSnapshotSize)
	if !ok || v.m == nil {
		return
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil || head.Version == nil {
		v.problem(rel, KindSchema, "not a memory index: no version member")
		return
	}
	want := schemaVersion(v.m, schema.MemoryIndex)
	if !schema.CanRead(schema.MemoryIndex, want) {
		return // refused with the manifest's versions
	}
	if *head.Version != want {
		v.problem(rel, KindSchema, "version %d, the manifest says memory_index schema %d", *head.Version, want)
		return
	}
	out, err := schema.Up(schema.MemoryIndex, want, schema.Current[schema.MemoryIndex], b)
	if err == nil {
		err = schema.CheckIndex(out, schema.Current[schema.MemoryIndex])
	}
	if err != nil {
		v.problem(rel, KindSchema, "%v", err)
	}
}

// checkOriginals checks that every original a migration kept (FORMAT
// §11.5) is present with its size; its content is checked with every blob's.
func (v *verifier) checkOriginals() {
	if v.m == nil {
		return
	}
	list, err := Originals(v.m)
	if err != nil {
		v.problem(manifest.FileName, KindManifest, "%v", err)
		return
	}
	for _, o := range list {
		hx := o.Digest.Hex()
		switch size, ok, first := v.refer(hx); {
		case !ok && first:
			v.problem(manifest.BlobsDir+"/"+hx, KindMissing, "the original of %s (%s version %d, written by %s) is missing", o.Path, o.Kind, o.Version, o.Writer)
		case ok && size >= 0 && size != o.Size:
			v.problem(manifest.BlobsDir+"/"+hx, KindReference, "the original of %s has %d bytes, the manifest says %d", o.Path, size, o.Size)
		}
	}
}
