package ident

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"
)

// Certificate returns a self-signed TLS certificate for the key. Validity
// dates are fixed and wide: trust comes from the pinned key, never from the
// clock or a CA.
func (k *Key) Certificate() (tls.Certificate, error) {
	serial := new(big.Int).SetBytes(k.Public()[:16])
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: string(k.id)},
		DNSNames:     []string{string(k.id)},
		NotBefore:    time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, k.Public(), k.priv)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k.priv}, nil
}
