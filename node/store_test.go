package node

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/vfs"
	"github.com/google/go-cmp/cmp"
)

func memData(t *testing.T) *vfs.Mem {
	t.Helper()
	fsys := vfs.NewMem()
	if err := vfs.MkdirAllDurable(fsys, "/data", 0o700); err != nil {
		t.Fatal(err)
	}
	return fsys
}

func TestPeersPersistAcrossCrash(t *testing.T) {
	fsys := memData(t)
	a, b := mustKey(t, 1).ID(), mustKey(t, 2).ID()
	p, err := OpenPeers(fsys, "/data")
	if err != nil {
		t.Fatal(err)
	}
	for _, peer := range []Peer{{ID: b, Addr: "127.0.0.2:7000"}, {ID: a, Addr: "127.0.0.1:7000"}, {ID: b, Addr: "127.0.0.2:7001"}} {
		if err := p.Add(peer); err != nil {
			t.Fatal(err)
		}
	}
	fsys.Crash()
	p2, err := OpenPeers(fsys, "/data")
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{{ID: a, Addr: "127.0.0.1:7000"}, {ID: b, Addr: "127.0.0.2:7001"}}
	if a > b {
		want[0], want[1] = want[1], want[0]
	}
	if diff := cmp.Diff(want, p2.List()); diff != "" {
		t.Errorf("peers after crash (-want +got):\n%s", diff)
	}
	if err := p2.Remove(a); err != nil {
		t.Fatal(err)
	}
	if p2.Known(a) || !p2.Known(b) {
		t.Errorf("after Remove(a): Known(a)=%v Known(b)=%v", p2.Known(a), p2.Known(b))
	}
	if err := p2.Remove(a); !errors.Is(err, ErrUnknownPeer) {
		t.Errorf("second Remove = %v, want ErrUnknownPeer", err)
	}
}

func TestPeersRefuseBadEntries(t *testing.T) {
	p, err := OpenPeers(memData(t), "/data")
	if err != nil {
		t.Fatal(err)
	}
	good := mustKey(t, 1).ID()
	for _, peer := range []Peer{{ID: "nope", Addr: "127.0.0.1:1"}, {ID: good, Addr: "no-port"}} {
		if err := p.Add(peer); err == nil {
			t.Errorf("Add(%+v) succeeded", peer)
		}
	}
}

func TestSecretsLookupAndMode(t *testing.T) {
	fsys := memData(t)
	if err := vfs.WriteFile(fsys, "/data/"+SecretsFile, []byte(`{"API_TOKEN":"s3cr3t-value"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CAPSULE_SECRET_FROM_ENV": "x"}
	s, err := OpenSecrets(fsys, "/data", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ABSENT"}, s.Missing([]string{"API_TOKEN", "FROM_ENV", "ABSENT"})); diff != "" {
		t.Errorf("Missing (-want +got):\n%s", diff)
	}
	if err := fsys.Chmod("/data/"+SecretsFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSecrets(fsys, "/data", nil); !errors.Is(err, ErrSecretsMode) {
		t.Errorf("world-readable secrets: err = %v, want ErrSecretsMode", err)
	}
	_ = fsys.Chmod("/data/"+SecretsFile, 0o600)
	if err := vfs.WriteFile(fsys, "/data/"+SecretsFile, []byte(`{"A":"s3cr3t-value",`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = OpenSecrets(fsys, "/data", nil)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("bad secrets file: err = %v (must fail and never echo a value)", err)
	}
}
