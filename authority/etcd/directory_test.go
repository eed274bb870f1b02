package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/authority"
	"github.com/agentcapsule/capsule/authority/etcd"
)

func newDirectory(t *testing.T, ttl time.Duration) *etcd.Directory {
	return etcd.NewDirectory(etcd.DirectoryConfig{Config: etcd.Config{Client: newClient(t, server.addr), Prefix: prefix(t)}, TTL: ttl})
}

func info(id string) authority.NodeInfo {
	return authority.NodeInfo{
		ID: id, Addr: "127.0.0.1:7070", PublicKey: "ed25519:" + id, Release: "0.3.0",
		Reads:  map[string][]int{"journal": {1, 2}},
		Labels: map[string]string{"zone": "a"},
	}
}

func node(id string, reachable, admitted, cordoned bool) authority.Node {
	return authority.Node{NodeInfo: info(id), Reachable: reachable, Admitted: admitted, Cordoned: cordoned}
}

func list(t *testing.T, d *etcd.Directory) []authority.Node {
	t.Helper()
	nodes, err := d.List(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// TestDirectoryAdmitCordon: a registered node is reachable but not
// placeable until admitted; a cordon (an operator's) makes it
// unplaceable again until uncordoned; Close shows it unreachable at once.
func TestDirectoryAdmitCordon(t *testing.T) {
	d := newDirectory(t, 0)
	r1, err := d.Register(ctxT(t), info("n1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Register(ctxT(t), info("n2")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]authority.Node{node("n1", true, false, false), node("n2", true, false, false)}, list(t, d)); diff != "" {
		t.Fatalf("after register (-want +got):\n%s", diff)
	}
	for _, f := range []func(context.Context, string) error{d.Admit, d.Cordon} {
		if err := f(ctxT(t), "n1"); err != nil {
			t.Fatal(err)
		}
	}
	got := list(t, d)
	if diff := cmp.Diff([]authority.Node{node("n1", true, true, true), node("n2", true, false, false)}, got); diff != "" {
		t.Fatalf("after admit and cordon (-want +got):\n%s", diff)
	}
	if got[0].Placeable() || got[1].Placeable() {
		t.Fatalf("a cordoned or unadmitted node is placeable: %+v", got)
	}
	if err := d.Uncordon(ctxT(t), "n1"); err != nil {
		t.Fatal(err)
	}
	if n := list(t, d)[0]; !n.Placeable() {
		t.Fatalf("admitted, uncordoned, reachable n1 not placeable: %+v", n)
	}
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(node("n1", false, true, false), list(t, d)[0]); diff != "" {
		t.Fatalf("after Close (-want +got):\n%s", diff)
	}
}

// TestLeaseExpiryUnreachable: a node that stops renewing (its process
// died: here its client closes without revoking) is shown unreachable
// once its lease lapses, stays listed with what it registered, and its
// agents' keys are untouched.
func TestLeaseExpiryUnreachable(t *testing.T) {
	d := newDirectory(t, time.Second)
	a := newAuthority(t, server.addr)
	dying := newClient(t, server.addr)
	dd := etcd.NewDirectory(etcd.DirectoryConfig{Config: etcd.Config{Client: dying, Prefix: prefix(t)}, TTL: time.Second})
	reg, err := dd.Register(ctxT(t), info("n1"))
	if err != nil {
		t.Fatal(err)
	}
	held, err := authority.Create(ctxT(t), a, "a1", "n1")
	if err != nil {
		t.Fatal(err)
	}
	watch, err := d.Watch(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if first := <-watch; len(first) != 1 || !first[0].Reachable {
		t.Fatalf("first view = %+v, want n1 reachable", first)
	}
	dying.Close()
	<-reg.Lost()
	for view := range watch { // ends when the test's context does
		if len(view) == 1 && !view[0].Reachable {
			break
		}
	}
	if diff := cmp.Diff([]authority.Node{node("n1", false, false, false)}, list(t, d)); diff != "" {
		t.Fatalf("after the lease lapsed (-want +got):\n%s", diff)
	}
	if got, err := a.Get(ctxT(t), "a1"); err != nil || got.Revision != held.Revision {
		t.Fatalf("agent key after the lease lapsed = %+v, %v; want it untouched %+v", got, err, held)
	}
}
