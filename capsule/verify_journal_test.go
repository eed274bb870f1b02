package capsule

import (
	"testing"

	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
)

// VerifyJournal reports exactly the journal problems Verify reports, and
// only those (FORMAT §7.7): a blob changed elsewhere is not its business.
func TestVerifyJournalMatchesVerify(t *testing.T) {
	base := vfs.NewMem()
	c, err := Init(base, "/cap", testConfig())
	if err != nil {
		t.Fatal(err)
	}
	populate(t, c)
	jpath := hostPath("/cap", manifest.JournalPath)
	tests := []struct {
		name   string
		change func(t *testing.T, fsys vfs.FS)
		want   []ProblemKind
	}{
		{"intact", func(*testing.T, vfs.FS) {}, nil},
		{"committed byte changed", func(t *testing.T, fsys vfs.FS) {
			b, err := vfs.ReadFile(fsys, jpath)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 1
			if err := vfs.WriteFile(fsys, jpath, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, []ProblemKind{KindDigest}},
		{"truncated", func(t *testing.T, fsys vfs.FS) {
			if err := vfs.WriteFile(fsys, jpath, []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []ProblemKind{KindSize}},
		{"journal removed", func(t *testing.T, fsys vfs.FS) {
			if err := fsys.Remove(jpath); err != nil {
				t.Fatal(err)
			}
		}, []ProblemKind{KindMissing}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := base.Clone()
			tc.change(t, fsys)
			rep, m, err := VerifyJournal(fsys, "/cap", VerifyOptions{})
			if err != nil || m == nil {
				t.Fatalf("VerifyJournal: manifest %v, %v", m, err)
			}
			if diff := cmp.Diff(tc.want, kindsOf(rep.Problems)); diff != "" {
				t.Errorf("VerifyJournal problems (-want +got):\n%s\n%v", diff, rep.Problems)
			}
			full, err := Verify(fsys, "/cap", VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var journal []Problem
			for _, p := range full.Problems {
				if p.Path == manifest.JournalPath {
					journal = append(journal, p)
				}
			}
			if diff := cmp.Diff(journal, rep.Problems, cmpEmpty); diff != "" {
				t.Errorf("VerifyJournal and Verify disagree on the journal (-verify +journal):\n%s", diff)
			}
		})
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []Problem) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return cmp.Equal(a, b)
})

func kindsOf(ps []Problem) []ProblemKind {
	var out []ProblemKind
	for _, p := range ps {
		out = append(out, p.Kind)
	}
	return out
}
