package signature

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Errors of loading a signing key.
var (
	// ErrPassphrase: the key is passphrase-protected and no passphrase was given.
	ErrPassphrase = errors.New("signature: key is protected by a passphrase")
	// ErrBadPassphrase: the passphrase does not open the key.
	ErrBadPassphrase = errors.New("signature: wrong passphrase")
	// ErrNoAgentKey: ssh-agent holds no usable key (with the fingerprint asked for).
	ErrNoAgentKey = errors.New("signature: no matching key in ssh-agent")
)

// ParseKey parses an OpenSSH (or PEM) private key: ed25519, RSA or ECDSA.
// If the key is encrypted, passphrase is called once for its passphrase; a
// nil passphrase func gives ErrPassphrase. Errors never hold key material or
// the passphrase.
func ParseKey(pemBytes []byte, passphrase func() ([]byte, error)) (ssh.Signer, error) {
	s, err := ssh.ParsePrivateKey(pemBytes)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if passphrase == nil {
			return nil, ErrPassphrase
		}
		pw, perr := passphrase()
		if perr != nil {
			return nil, fmt.Errorf("signature: read passphrase: %w", perr)
		}
		s, err = ssh.ParsePrivateKeyWithPassphrase(pemBytes, pw)
		clear(pw)
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, ErrBadPassphrase
		}
	}
	if err != nil {
		return nil, fmt.Errorf("signature: parse key: %w", err)
	}
	if isCert(s.PublicKey()) {
		return nil, ErrCertificate
	}
	return s, nil
}

// AgentSigner returns the ssh-agent key whose SHA256 fingerprint (as
// `ssh-keygen -lf` prints it, "SHA256:…"; the prefix may be left out) is
// fingerprint, or the agent's first plain key if fingerprint is "".
// Certificates held by the agent are skipped.
func AgentSigner(a agent.Agent, fingerprint string) (ssh.Signer, error) {
	signers, err := a.Signers()
	if err != nil {
		return nil, fmt.Errorf("signature: ssh-agent: %w", err)
	}
	want := fingerprint
	if want != "" && !strings.HasPrefix(want, "SHA256:") {
		want = "SHA256:" + want
	}
	var have []string
	for _, s := range signers {
		if isCert(s.PublicKey()) {
			continue
		}
		fp := ssh.FingerprintSHA256(s.PublicKey())
		if want == "" || fp == want {
			return s, nil
		}
		have = append(have, fp)
	}
	if fingerprint == "" {
		return nil, fmt.Errorf("%w: the agent holds no keys", ErrNoAgentKey)
	}
	return nil, fmt.Errorf("%w: %s (agent holds %s)", ErrNoAgentKey, fingerprint, strings.Join(have, ", "))
}

// Fingerprint returns the SHA256 fingerprint of k as ssh-keygen prints it.
func Fingerprint(k ssh.PublicKey) string { return ssh.FingerprintSHA256(k) }
