package etcd_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certs is a throwaway CA and the server's and client's certificates
// it signed, as files (what --etcd-cert/key/ca name).
type certs struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// makeCerts writes a CA, a server certificate for 127.0.0.1 and a client
// certificate into dir.
func makeCerts(dir string) (certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certs{}, err
	}
	caTmpl := template(1, "capsule test CA")
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return certs{}, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	c := certs{CA: filepath.Join(dir, "ca.pem")}
	if err := writePEM(c.CA, "CERTIFICATE", caDER); err != nil {
		return certs{}, err
	}
	c.ServerCert, c.ServerKey, err = leaf(dir, "server", 2, ca, caKey)
	if err != nil {
		return certs{}, err
	}
	c.ClientCert, c.ClientKey, err = leaf(dir, "client", 3, ca, caKey)
	return c, err
}

func template(serial int64, cn string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
}

func leaf(dir, name string, serial int64, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := template(serial, name)
	tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	cert, keyFile := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := writePEM(cert, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	return cert, keyFile, writePEM(keyFile, "EC PRIVATE KEY", kder)
}

func writePEM(file, typ string, der []byte) error {
	return os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
