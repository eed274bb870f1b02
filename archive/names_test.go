package archive

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/vfs"
)

// TestBlobNamesClaimedOnce pins FORMAT §9.1 for the blobs, which the
// extractor remembers through the staging folder and the greatest blob name
// rather than in its table of names: a blob name seen before is refused as
// a duplicate, and one differing only by case as a collision, in the
// archive's sorted order and out of it.
func TestBlobNamesClaimedOnce(t *testing.T) {
	blob := func(body string) tarEntry {
		return file(blobsDir+"/"+digest.FromString(body).Hex(), body)
	}
	upper := func(e tarEntry) tarEntry {
		e.hdr.Name = blobsDir + "/" + strings.ToUpper(strings.TrimPrefix(e.hdr.Name, blobsDir+"/"))
		return e
	}
	a, b := blob("a"), blob("b")
	if a.hdr.Name > b.hdr.Name {
		a, b = b, a // a sorts first
	}
	tests := []struct {
		name    string
		entries []tarEntry
		wantErr error
	}{
		{"sorted", []tarEntry{a, b}, nil},
		{"out of order", []tarEntry{b, a}, nil},
		{"repeated in order", []tarEntry{a, a}, ErrDuplicate},
		{"repeated out of order", []tarEntry{b, a, b}, ErrDuplicate},
		{"repeated below the greatest", []tarEntry{a, b, a}, ErrDuplicate},
		{"case of the last", []tarEntry{a, upper(a)}, ErrCaseCollision},
		{"case of an earlier one", []tarEntry{a, b, upper(a)}, ErrCaseCollision},
		{"upper case alone", []tarEntry{upper(a)}, ErrLayout},
	}
	// Small files are created on the extractor's writer goroutine; slowing
	// its creations lets the reader run ahead, so a look at the folder
	// for a repeated blob must wait for the files queued before it.
	slowCreates := func() vfs.FS {
		f := vfs.NewFaulty(vfs.NewMem())
		f.OnOp(func(rec vfs.OpRecord) error {
			if rec.Op == vfs.OpCreate && strings.Contains(rec.Path, "/"+blobsDir+"/") {
				time.Sleep(5 * time.Millisecond)
			}
			return nil
		})
		return f
	}
	for fsName, newFS := range map[string]func() vfs.FS{"mem": func() vfs.FS { return vfs.NewMem() }, "slow creates": slowCreates} {
		for _, tc := range tests {
			t.Run(fsName+"/"+tc.name, func(t *testing.T) {
				accept := func(vfs.FS, string) ([]Problem, error) { return nil, nil }
				_, err := Import(newFS(), tarCase(tc.entries...)(t), "/agent", ImportConfig{Verify: accept})
				if tc.wantErr == nil && err != nil || !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			})
		}
	}
}

// TestImportHashesBlobsAsItWrites pins ImportConfig.VerifyHashed: it runs
// instead of Verify when every blob matched its name as it was written, and
// Verify runs when one did not, so a damaged blob is still reported by the
// full check.
func TestImportHashesBlobsAsItWrites(t *testing.T) {
	m := file(ManifestName, "{}\n")
	good := file(blobsDir+"/"+digest.FromString("a").Hex(), "a")
	bad := file(blobsDir+"/"+digest.FromString("b").Hex(), "not b")
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		want    string
	}{
		{"intact", []tarEntry{m, good}, "hashed"},
		{"no blobs", []tarEntry{m}, "hashed"},
		{"damaged", []tarEntry{m, good, bad}, "full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			verifier := func(name string) Verifier {
				return func(vfs.FS, string) ([]Problem, error) { ran = append(ran, name); return nil, nil }
			}
			cfg := ImportConfig{Verify: verifier("full"), VerifyHashed: verifier("hashed")}
			if _, err := Import(vfs.NewMem(), tarCase(tc.entries...)(t), "/agent", cfg); err != nil {
				t.Fatal(err)
			}
			if len(ran) != 1 || ran[0] != tc.want {
				t.Errorf("verifiers run: %v, want [%s]", ran, tc.want)
			}
		})
	}
}
