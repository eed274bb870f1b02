package etcd_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/agentcapsule/capsule/authority/etcd"
)

// server is the package's one embedded etcd member (a real etcd server in
// this process), serving TLS with client certificates on 127.0.0.1.
var server struct {
	addr  string // host:port of the client URL
	certs certs
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "capsule-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	e, err := startEtcd(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedded etcd:", err)
		return 1
	}
	defer e.Close()
	return m.Run()
}

func startEtcd(dir string) (*embed.Etcd, error) {
	c, err := makeCerts(dir)
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir + "/data"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cu := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = c.ServerCert, c.ServerKey
	cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = c.CA, true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, fmt.Errorf("not ready after 30 s")
	}
	server.addr, server.certs = cu.Host, c
	return e, nil
}

// freePorts asks the kernel for n free ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// newClient connects to addr (the server, or a proxy in front of it) with
// the client certificate, as `capsule node --etcd` does; the test closes
// it.
func newClient(t testing.TB, addr string) *clientv3.Client {
	t.Helper()
	c := server.certs
	cli, err := etcd.Dial(etcd.DialConfig{Endpoints: "https://" + addr, Cert: c.ClientCert, Key: c.ClientKey, CA: c.CA})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// prefix gives each test its own key space.
func prefix(t testing.TB) string { return "/capsule-test/" + t.Name() }

func newAuthority(t testing.TB, addr string) *etcd.Authority {
	return etcd.New(etcd.Config{Client: newClient(t, addr), Prefix: prefix(t)})
}

// ctxT is a context for one call of a test.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
