package authoritytest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/authority"
)

// OpenDirectory returns an empty Directory for one subtest.
type OpenDirectory func(t *testing.T) authority.Directory

// RunDirectory runs the directory suite (PROTOCOL §12.3) against the
// Directory open returns: presence, admission, cordons, and watches.
func RunDirectory(t *testing.T, open OpenDirectory) {
	t.Run("AdmitCordon", func(t *testing.T) { testAdmitCordon(t, open(t)) })
	t.Run("CloseKeepsListing", func(t *testing.T) { testCloseKeepsListing(t, open(t)) })
	t.Run("MarksBeforeRegister", func(t *testing.T) { testMarksBeforeRegister(t, open(t)) })
	t.Run("Watch", func(t *testing.T) { testWatch(t, open(t)) })
}

// Info is a node's registration for the suite.
func Info(id string) authority.NodeInfo {
	return authority.NodeInfo{
		ID: id, Addr: "127.0.0.1:7070", PublicKey: "ed25519:" + id, Release: "0.3.0",
		Reads:  map[string][]int{"journal": {1, 2}},
		Labels: map[string]string{"zone": "a"},
	}
}

// NodeView is how the directory should show Info(id).
func NodeView(id string, reachable, admitted, cordoned bool) authority.Node {
	return authority.Node{NodeInfo: Info(id), Reachable: reachable, Admitted: admitted, Cordoned: cordoned}
}

func register(t *testing.T, d authority.Directory, id string) authority.Registration {
	t.Helper()
	r, err := d.Register(context.Background(), Info(id))
	if err != nil {
		t.Fatalf("Register(%s): %v", id, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func wantList(t *testing.T, d authority.Directory, what string, want []authority.Node) []authority.Node {
	t.Helper()
	got, err := d.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s (-want +got):\n%s", what, diff)
	}
	return got
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testAdmitCordon: a registered node is reachable but not placeable until
// admitted; an operator's cordon makes it unplaceable until uncordoned.
func testAdmitCordon(t *testing.T, d authority.Directory) {
	ctx := context.Background()
	register(t, d, "n1")
	register(t, d, "n2")
	wantList(t, d, "after register", []authority.Node{NodeView("n1", true, false, false), NodeView("n2", true, false, false)})
	must(t, d.Admit(ctx, "n1"))
	must(t, d.Cordon(ctx, "n1"))
	got := wantList(t, d, "after admit and cordon", []authority.Node{NodeView("n1", true, true, true), NodeView("n2", true, false, false)})
	if got[0].Placeable() || got[1].Placeable() {
		t.Fatalf("a cordoned or unadmitted node is placeable: %+v", got)
	}
	must(t, d.Uncordon(ctx, "n1"))
	if got := wantList(t, d, "after uncordon", []authority.Node{NodeView("n1", true, true, false), NodeView("n2", true, false, false)}); !got[0].Placeable() {
		t.Fatalf("admitted, uncordoned, reachable n1 not placeable: %+v", got[0])
	}
}

// testCloseKeepsListing: a closed registration shows the node unreachable
// at once, still listed with what it registered; registering again makes
// it reachable.
func testCloseKeepsListing(t *testing.T, d authority.Directory) {
	r := register(t, d, "n1")
	must(t, d.Admit(context.Background(), "n1"))
	must(t, r.Close())
	select {
	case <-r.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed after Close")
	}
	wantList(t, d, "after Close", []authority.Node{NodeView("n1", false, true, false)})
	register(t, d, "n1")
	wantList(t, d, "after registering again", []authority.Node{NodeView("n1", true, true, false)})
}

// testMarksBeforeRegister: an operator may admit or cordon a node before
// it first registers; the directory shows it by ID alone until then.
func testMarksBeforeRegister(t *testing.T, d authority.Directory) {
	must(t, d.Admit(context.Background(), "n9"))
	must(t, d.Cordon(context.Background(), "n9"))
	wantList(t, d, "marks alone", []authority.Node{{NodeInfo: authority.NodeInfo{ID: "n9"}, Admitted: true, Cordoned: true}})
	register(t, d, "n9")
	wantList(t, d, "after register", []authority.Node{NodeView("n9", true, true, true)})
}

// testWatch: a watch sends the list at once, then a list after each change.
func testWatch(t *testing.T, d authority.Directory) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := d.Watch(ctx)
	must(t, err)
	if first := <-ch; len(first) != 0 {
		t.Fatalf("first view of an empty directory = %+v", first)
	}
	register(t, d, "n1")
	must(t, d.Cordon(ctx, "n1"))
	want := []authority.Node{NodeView("n1", true, false, true)}
	for view := range ch {
		if cmp.Equal(view, want) {
			return
		}
	}
	t.Fatalf("watch never showed %+v", want)
}
