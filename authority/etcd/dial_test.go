package etcd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/authority/etcd"
)

// TestDialRefusesBadConfig: the flags' mistakes are named before any
// connection.
func TestDialRefusesBadConfig(t *testing.T) {
	c := server.certs
	for _, tc := range []struct {
		name string
		cfg  etcd.DialConfig
		want string
	}{
		{"no endpoints", etcd.DialConfig{Endpoints: " , "}, "no endpoints"},
		{"cert without key", etcd.DialConfig{Endpoints: "https://" + server.addr, Cert: c.ClientCert, CA: c.CA}, "go together"},
		{"CA not PEM", etcd.DialConfig{Endpoints: "https://" + server.addr, Cert: c.ClientCert, Key: c.ClientKey, CA: c.ClientKey}, "no certificate"},
	} {
		if _, err := etcd.Dial(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestDialWithoutClientCert: the server requires a client certificate, so
// a client that has only the CA is refused.
func TestDialWithoutClientCert(t *testing.T) {
	cli, err := etcd.Dial(etcd.DialConfig{Endpoints: "https://" + server.addr, CA: server.certs.CA})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := cli.Get(ctx, "/x"); err == nil {
		t.Fatal("a client without a certificate read from a server that requires one")
	}
}
