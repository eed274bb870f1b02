package authority_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/authority"
	"github.com/agentcapsule/capsule/authority/authoritytest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

func TestMemFileConformance(t *testing.T) {
	authoritytest.Run(t, func(t *testing.T) authority.Authority {
		m, err := authority.OpenMem(vfs.NewMem(), "fleet.json")
		if err != nil {
			t.Fatal(err)
		}
		return m
	})
}

// TestMemFileReopen: what a Mem with a file wrote is there after it is
// opened again, revisions included, and revisions go on growing.
func TestMemFileReopen(t *testing.T) {
	ctx := context.Background()
	fsys := vfs.NewMem()
	m, err := authority.OpenMem(fsys, "fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authority.Create(ctx, m, "a1", "n1"); err != nil {
		t.Fatal(err)
	}
	want, err := authority.Activate(ctx, m, "a1", "n1", 1, "n2")
	if err != nil {
		t.Fatal(err)
	}
	again, err := authority.OpenMem(fsys, "fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := again.Get(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after reopen (-want +got):\n%s", diff)
	}
	next, err := authority.Burn(ctx, again, "a1", "n2", 2)
	if err != nil || next.Revision <= got.Revision {
		t.Fatalf("Burn after reopen = %+v, %v; want a revision above %d", next, err, got.Revision)
	}
}

// TestMemFileWriteFails: a write the file refuses changes nothing, in
// memory or on disk.
func TestMemFileWriteFails(t *testing.T) {
	ctx := context.Background()
	fsys := vfs.NewFaulty(vfs.NewMem())
	m, err := authority.OpenMem(fsys, "fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	before, err := authority.Create(ctx, m, "a1", "n1")
	if err != nil {
		t.Fatal(err)
	}
	rule := fsys.Fail(vfs.OpSync, "", vfs.ErrNoSpace)
	if _, err := authority.Activate(ctx, m, "a1", "n1", 1, "n2"); !errors.Is(err, vfs.ErrNoSpace) {
		t.Fatalf("Activate on a full disk: %v, want ErrNoSpace", err)
	}
	if rule.Hits() == 0 {
		t.Fatal("the fault was never reached")
	}
	for name, a := range map[string]func() (authority.Authority, error){
		"memory": func() (authority.Authority, error) { return m, nil },
		"file":   func() (authority.Authority, error) { return authority.OpenMem(fsys, "fleet.json") },
	} {
		a, err := a()
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.Get(ctx, "a1")
		if err != nil || got.Revision != before.Revision || got.Holding != before.Holding {
			t.Errorf("%s after the failed write = %+v, %v; want %+v", name, got, err, before)
		}
	}
}

// TestDecodeRefusesVersions: a record of a version this release does not
// read is refused with the version and its writer; a record of another
// agent or state is refused too.
func TestDecodeRefusesVersions(t *testing.T) {
	for _, c := range []struct {
		name, value, want string
	}{
		{"newer", `{"v":2,"release":"9.0.0","agent":"a1","node":"n1","epoch":1,"state":"held"}`, "version 2 (written by 9.0.0)"},
		{"unversioned", `{"agent":"a1","node":"n1","epoch":1,"state":"held"}`, "version 0"},
		{"other agent", `{"v":1,"release":"0.3.0","agent":"a2","node":"n1","epoch":1,"state":"held"}`, `names agent "a2"`},
		{"unknown state", `{"v":1,"release":"0.3.0","agent":"a1","node":"n1","epoch":1,"state":"running"}`, `unknown state "running"`},
	} {
		_, err := authority.DecodeHolding("a1", []byte(c.value))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	_, err := authority.DecodeNode([]byte(`{"v":3,"release":"9.0.0","node":{"id":"n1"}}`))
	if !errors.Is(err, schema.ErrRefused) {
		t.Errorf("node record of version 3: %v, want schema.ErrRefused", err)
	}
}

// TestRecordRoundTrip pins the stored bytes of an agent's key: a change
// here is a change of the stored format (FORMAT §11).
func TestRecordRoundTrip(t *testing.T) {
	h := authority.Holding{Node: "n1", Epoch: 7, State: authority.Moving}
	b, err := authority.EncodeHolding("a1", h)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"release":"` + schema.Release + `","agent":"a1","node":"n1","epoch":7,"state":"moving"}`
	if string(b) != want {
		t.Fatalf("stored bytes = %s, want %s", b, want)
	}
	got, err := authority.DecodeHolding("a1", b)
	if err != nil || got != h {
		t.Fatalf("DecodeHolding = %v, %v; want %v", got, err, h)
	}
}

func TestNodesView(t *testing.T) {
	infos := []authority.NodeInfo{{ID: "n2", Cordoned: true}, {ID: "n1"}}
	got := authority.Nodes(infos,
		map[string]bool{"n1": true, "n2": true},
		map[string]bool{"n1": true, "n3": true},
		map[string]bool{})
	want := []authority.Node{
		{NodeInfo: authority.NodeInfo{ID: "n1"}, Reachable: true, Admitted: true},
		{NodeInfo: authority.NodeInfo{ID: "n2", Cordoned: true}, Reachable: true, Cordoned: true},
		{NodeInfo: authority.NodeInfo{ID: "n3"}, Admitted: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Nodes (-want +got):\n%s", diff)
	}
	if !got[0].Placeable() || got[1].Placeable() || got[2].Placeable() {
		t.Fatalf("Placeable wrong: %+v", got)
	}
}

// TestMemDirectoryExpire: an expired presence (a lapsed lease) shows the
// node unreachable, still listed, and closes its registration's Lost.
func TestMemDirectoryExpire(t *testing.T) {
	ctx := context.Background()
	d := authority.NewMemDirectory()
	r, err := d.Register(ctx, authoritytest.Info("n1"))
	if err != nil {
		t.Fatal(err)
	}
	d.Expire("n1")
	<-r.Lost()
	got, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]authority.Node{authoritytest.NodeView("n1", false, false, false)}, got); diff != "" {
		t.Fatalf("after Expire (-want +got):\n%s", diff)
	}
}
