package schema

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckPassesForThisRelease(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatal(err)
	}
}

// withRegistry runs f with the registry and steps changed by edit, then
// restores them.
func withRegistry(t *testing.T, edit func()) {
	t.Helper()
	saveR, saveU, saveD := registry, ups, downs
	registry, ups, downs = copyOf(registry), copySteps(ups), copySteps(downs)
	t.Cleanup(func() { registry, ups, downs = saveR, saveU, saveD })
	edit()
}

func copyOf(m map[Kind]History) map[Kind]History {
	out := map[Kind]History{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func copySteps(m map[Kind]map[int]Step) map[Kind]map[int]Step {
	out := map[Kind]map[int]Step{}
	for k, byFrom := range m {
		out[k] = map[int]Step{}
		for v, s := range byFrom {
			out[k][v] = s
		}
	}
	return out
}

func TestCheckFindsEveryBreak(t *testing.T) {
	cases := map[string]struct {
		edit func()
		want string
	}{
		"missing step":    {func() { delete(ups[Environment], 1) }, "environment: no step from version 1 to 2"},
		"missing history": {func() { delete(registry, Peers) }, "peers: no history"},
		"no summary": {func() {
			h := registry[Session]
			h.Versions = []Version{{1, "", "0.1.0"}}
			registry[Session] = h
		}, "session: version 1 has no summary"},
		"floor above current": {func() {
			h := registry[Snapshot]
			h.Floor = 2
			registry[Snapshot] = h
		}, "snapshot: floor 2, current 1"},
		"written version without a release": {func() {
			h := registry[Journal]
			h.Versions = append([]Version(nil), h.Versions...)
			h.Versions[1].Since = ""
			registry[Journal] = h
		}, "journal: version 2 is written but names no release"},
		"stray step": {func() {
			register(Step{Kind: Snapshot, From: 1, To: 2, Summary: "x", Apply: func(b []byte) ([]byte, error) { return b, nil }})
		}, "snapshot: stray or malformed step from version 1 to 2"},
		"step without summary": {func() {
			s := ups[MemoryIndex][1]
			s.Summary = ""
			ups[MemoryIndex][1] = s
		}, "memory_index: step from version 1 is malformed"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			withRegistry(t, c.edit)
			err := Check()
			if !errors.Is(err, ErrBrokenChain) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check() = %v, want %q", err, c.want)
			}
		})
	}
}

func TestEveryKindHasAHistory(t *testing.T) {
	seen := map[Kind]bool{}
	for _, h := range Histories() {
		if seen[h.Kind] {
			t.Errorf("kind %s twice", h.Kind)
		}
		seen[h.Kind] = true
		if Current[h.Kind] != h.Current {
			t.Errorf("Current[%s] = %d, history says %d", h.Kind, Current[h.Kind], h.Current)
		}
	}
	if len(seen) != len(Kinds)+len(NodeKinds) || len(registry) != len(seen) {
		t.Errorf("%d histories for %d kinds", len(registry), len(Kinds)+len(NodeKinds))
	}
}

func TestCanReadFloorToCurrent(t *testing.T) {
	for _, h := range Histories() {
		if CanRead(h.Kind, h.Floor-1) || !CanRead(h.Kind, h.Floor) || !CanRead(h.Kind, h.Current) || CanRead(h.Kind, h.Current+1) {
			t.Errorf("%s: CanRead disagrees with floor %d and current %d", h.Kind, h.Floor, h.Current)
		}
	}
	if CanRead("nonsense", 1) {
		t.Error("an unknown kind is readable")
	}
}

func TestStepsRefuseWhatNoChainJoins(t *testing.T) {
	for _, c := range []struct {
		k        Kind
		from, to int
	}{{Environment, 0, 2}, {Environment, 1, 3}, {Environment, 2, 1}, {Snapshot, 1, 2}} {
		if _, err := Steps(c.k, c.from, c.to); !errors.Is(err, ErrNoPath) {
			t.Errorf("Steps(%s, %d, %d) = %v, want ErrNoPath", c.k, c.from, c.to, err)
		}
	}
	if _, err := Steps("nonsense", 1, 1); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := DownSteps(Snapshot, 2, 1); !errors.Is(err, ErrNoPath) {
		t.Errorf("DownSteps(snapshot, 2, 1) = %v, want ErrNoPath", err)
	}
	if s, err := Steps(Environment, 1, 2); err != nil || len(s) != 1 || s[0].From != 1 {
		t.Errorf("Steps(environment, 1, 2) = %v, %v", s, err)
	}
}
