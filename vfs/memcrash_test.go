package vfs_test

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/vfs"
	"github.com/agentcapsule/capsule/vfs/vfstest"
)

// appendTo appends data to name without a sync.
func appendTo(name, data string) step {
	return func(t *testing.T, m *vfs.Mem) {
		t.Helper()
		f, err := m.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.Write([]byte(data))
		must(t, err)
		must(t, f.Close())
	}
}

// TestMemCrashOutcomes lists, for each sequence of operations on the base
// tree (/a = "A", /d/x = "X"), the unsynced changes and every tree a crash
// can leave: each closed set of kept changes, via CrashKeeping.
func TestMemCrashOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		steps   []step
		changes []string
		trees   []string // each tree as its sorted "path=contents" list
	}{
		{"nothing pending", []step{syncDir("/")}, nil, []string{"a=A d/ d/x=X"}},
		{"rename on its own", []step{rename("/a", "/b")},
			[]string{"rename /a -> /b"},
			[]string{"a=A d/ d/x=X", "b=A d/ d/x=X"}},
		{"rename across dirs is atomic", []step{rename("/a", "/d/a")},
			[]string{"rename /a -> /d/a"},
			[]string{"a=A d/ d/x=X", "d/ d/a=A d/x=X"}},
		{"rename needs the creation of its source", []step{put("/t", "T"), fsync("/t"), rename("/t", "/a")},
			[]string{"create /t", "rename /t -> /a needs 0"},
			[]string{"a=A d/ d/x=X", "a=A d/ d/x=X t=T", "a=T d/ d/x=X"}},
		{"changes in two dirs are independent", []step{remove("/a"), remove("/d/x")},
			[]string{"remove /a", "remove /d/x"},
			[]string{"a=A d/ d/x=X", "d/ d/x=X", "a=A d/", "d/"}},
		{"syncdir keeps what it needs", []step{put("/t", "T"), fsync("/t"), rename("/t", "/d/t"), syncDir("/d")},
			nil, []string{"a=A d/ d/t=T d/x=X"}},
		{"unsynced data", []step{put("/a", "B")},
			[]string{"write /a"},
			[]string{"a=A d/ d/x=X", "a=B d/ d/x=X"}},
		{"torn append", []step{appendTo("/a", "BCDE")},
			[]string{"torn write /a", "write /a needs 0"},
			[]string{"a=A d/ d/x=X", "a=ABC d/ d/x=X", "a=ABCDE d/ d/x=X"}},
		{"removeall", []step{removeAll("/d")},
			[]string{"remove /d/x", "remove /d"},
			[]string{"a=A d/ d/x=X", "a=A d/", "a=A"}},
		{"directory rename needs all before it", []step{put("/n", "N"), fsync("/n"), rename("/d", "/e")},
			[]string{"create /n", "rename /d -> /e needs 0"},
			[]string{"a=A d/ d/x=X", "a=A d/ d/x=X n=N", "a=A e/ e/x=X n=N"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newBaseMem(t)
			for _, s := range tc.steps {
				s(t, m)
			}
			changes := m.Unsynced()
			if diff := cmp.Diff(tc.changes, describeChanges(changes)); diff != "" {
				t.Errorf("Unsynced (-want +got):\n%s", diff)
			}
			kept, sampled := vfstest.Outcomes(changes, 1, 0)
			if sampled {
				t.Fatalf("%d changes sampled", len(changes))
			}
			seen := map[string]bool{}
			for _, k := range kept {
				c := m.Clone()
				c.CrashKeeping(func(i int) bool { return k[i] })
				seen[flat(vfstest.Snapshot(t, c, "/"))] = true
			}
			var got []string
			for tree := range seen {
				got = append(got, tree)
			}
			sort.Strings(got)
			want := append([]string(nil), tc.trees...)
			sort.Strings(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("trees after a crash (-want +got):\n%s", diff)
			}
		})
	}
}

func describeChanges(changes []vfs.Change) []string {
	var out []string
	for _, c := range changes {
		s := c.String()
		if len(c.Needs) > 0 {
			s += " needs"
			for _, n := range c.Needs {
				s += " " + string(rune('0'+n))
			}
		}
		out = append(out, s)
	}
	return out
}

func flat(snap map[string]string) string {
	var parts []string
	for k, v := range snap {
		if strings.HasSuffix(k, "/") {
			parts = append(parts, k)
		} else {
			parts = append(parts, k+"="+v)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// TestOutcomesSampleBothSides: with more changes than MaxExhaustive,
// Outcomes still keeps each change in one outcome and loses it in another,
// and the same seed gives the same outcomes.
func TestOutcomesSampleBothSides(t *testing.T) {
	var changes []vfs.Change
	for i := range vfstest.MaxExhaustive + 4 {
		c := vfs.Change{Kind: vfs.ChangeCreate, Path: "/f"}
		if i%3 == 2 {
			c.Needs = []int{i - 1}
		}
		changes = append(changes, c)
	}
	kept, sampled := vfstest.Outcomes(changes, 7, 5)
	if !sampled {
		t.Fatal("not sampled")
	}
	for i := range changes {
		var in, out bool
		for _, k := range kept {
			in, out = in || k[i], out || !k[i]
		}
		if !in || !out {
			t.Errorf("change %d: kept in some outcome %v, lost in some %v", i, in, out)
		}
	}
	for _, k := range kept {
		for i, c := range changes {
			for _, n := range c.Needs {
				if k[i] && !k[n] {
					t.Errorf("outcome keeps %d without %d, which it needs", i, n)
				}
			}
		}
	}
	again, _ := vfstest.Outcomes(changes, 7, 5)
	if diff := cmp.Diff(kept, again); diff != "" {
		t.Errorf("same seed, other outcomes:\n%s", diff)
	}
}
