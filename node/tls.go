package node

import (
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// ErrPeerRefused is the reason a TLS handshake with an unknown or mismatched
// peer fails. It is raised inside the handshake, so the server never reads a
// request from such a peer.
var ErrPeerRefused = errors.New("node: peer refused")

// PeerIDError says which node a TLS peer proved to be and which was expected.
type PeerIDError struct {
	Want ID // empty when any known peer would do
	Got  ID
}

// Error says which node was expected and which one answered.
func (e *PeerIDError) Error() string {
	if e.Want == "" {
		return fmt.Sprintf("%v: %s is not a known peer", ErrPeerRefused, e.Got)
	}
	return fmt.Sprintf("%v: expected %s, peer is %s", ErrPeerRefused, e.Want, e.Got)
}

// Unwrap makes errors.Is(err, ErrPeerRefused) true.
func (e *PeerIDError) Unwrap() error { return ErrPeerRefused }

// PeerID derives the node ID of the leaf certificate a peer presented.
func PeerID(certs []*x509.Certificate) (ID, error) {
	if len(certs) == 0 {
		return "", fmt.Errorf("%w: no certificate", ErrPeerRefused)
	}
	pub, ok := certs[0].PublicKey.(ed25519.PublicKey)
	if !ok {
		return "", fmt.Errorf("%w: certificate key is not ed25519", ErrPeerRefused)
	}
	// The handshake's CertificateVerify already proves the peer holds the
	// key; the self-signature check refuses a malformed certificate early.
	c := certs[0]
	if err := c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
		return "", fmt.Errorf("%w: certificate is not self-signed by its key: %v", ErrPeerRefused, err)
	}
	return IDFromPublicKey(pub), nil
}

// ServerTLS returns the configuration of the node-to-node listener: TLS 1.3
// only, a client certificate required, and the client's derived ID checked
// with known during the handshake. An unknown client never gets a request read.
func ServerTLS(cert tls.Certificate, known func(ID) bool) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAnyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := PeerID(cs.PeerCertificates)
			if err != nil {
				return err
			}
			if !known(id) {
				return &PeerIDError{Got: id}
			}
			return nil
		},
	}
}

// ClientTLS returns the configuration for dialling the peer want: TLS 1.3
// only, our certificate presented, and the server's derived ID compared with
// want. The standard chain verification is replaced (no CA), not skipped: the
// pinned ID is the check.
func ClientTLS(cert tls.Certificate, want ID) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, // replaced by VerifyConnection below
		ServerName:         string(want),
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := PeerID(cs.PeerCertificates)
			if err != nil {
				return err
			}
			if id != want {
				return &PeerIDError{Want: want, Got: id}
			}
			return nil
		},
	}
}
