package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// DialConfig is what `capsule node --etcd ENDPOINTS --etcd-cert/key/ca`
// names: the cluster's client URLs and, for TLS, the node's client
// certificate and the CA that signed the cluster's.
type DialConfig struct {
	// Endpoints is a comma-separated list of client URLs
	// ("https://10.0.0.1:2379,https://10.0.0.2:2379").
	Endpoints string
	// Cert and Key are the client certificate and its key (PEM files);
	// CA verifies the servers. Set all three for mutual TLS, CA alone for
	// TLS without a client certificate, none for plain connections.
	Cert, Key, CA string
	// DialTimeout bounds the first connection (default 5 s).
	DialTimeout time.Duration
}

// Dial connects to the cluster cfg names. The caller closes the client.
func Dial(cfg DialConfig) (*clientv3.Client, error) {
	var eps []string
	for e := range strings.SplitSeq(cfg.Endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("authority/etcd: dial: no endpoints in %q", cfg.Endpoints)
	}
	tc, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	timeout := cfg.DialTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: timeout, TLS: tc, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("authority/etcd: dial %s: %w", cfg.Endpoints, err)
	}
	return cli, nil
}

// tlsConfig builds the client's TLS from cfg's files; nil when none is set.
func tlsConfig(cfg DialConfig) (*tls.Config, error) {
	if cfg.Cert == "" && cfg.Key == "" && cfg.CA == "" {
		return nil, nil
	}
	if (cfg.Cert == "") != (cfg.Key == "") {
		return nil, fmt.Errorf("authority/etcd: dial: --etcd-cert and --etcd-key go together")
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.Cert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("authority/etcd: dial: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	if cfg.CA != "" {
		pemCA, err := os.ReadFile(cfg.CA)
		if err != nil {
			return nil, fmt.Errorf("authority/etcd: dial: CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemCA) {
			return nil, fmt.Errorf("authority/etcd: dial: CA %s: no certificate in it", cfg.CA)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}
