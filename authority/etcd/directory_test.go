package etcd_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcapsule/capsule/authority"
	"github.com/agentcapsule/capsule/authority/authoritytest"
	"github.com/agentcapsule/capsule/authority/etcd"
)

func newDirectory(t *testing.T, ttl time.Duration) *etcd.Directory {
	return etcd.NewDirectory(etcd.DirectoryConfig{Config: etcd.Config{Client: newClient(t, server.addr), Prefix: prefix(t)}, TTL: ttl})
}

// TestDirectoryConformance runs the directory suite on the embedded etcd.
func TestDirectoryConformance(t *testing.T) {
	authoritytest.RunDirectory(t, func(t *testing.T) authority.Directory { return newDirectory(t, 0) })
}

func list(t *testing.T, d *etcd.Directory) []authority.Node {
	t.Helper()
	nodes, err := d.List(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return nodes
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
	reg, err := dd.Register(ctxT(t), authoritytest.Info("n1"))
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
	if diff := cmp.Diff([]authority.Node{authoritytest.NodeView("n1", false, false, false)}, list(t, d)); diff != "" {
		t.Fatalf("after the lease lapsed (-want +got):\n%s", diff)
	}
	if got, err := a.Get(ctxT(t), "a1"); err != nil || got.Revision != held.Revision {
		t.Fatalf("agent key after the lease lapsed = %+v, %v; want it untouched %+v", got, err, held)
	}
}
