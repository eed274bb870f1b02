package signature

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Sentinel errors of verification. Errors wrap one of them with detail.
var (
	// ErrMalformed: the signature file is not an armored SSH signature.
	ErrMalformed = errors.New("signature: malformed")
	// ErrNamespace: the signature was made for another namespace than "capsule".
	ErrNamespace = errors.New("signature: wrong namespace")
	// ErrMismatch: the signature does not match the manifest bytes.
	ErrMismatch = errors.New("signature: does not match the manifest")
	// ErrUntrusted: no allowed_signers line lets the identity sign with this key.
	ErrUntrusted = errors.New("signature: no allowed signer matches")
	// ErrNotValidNow: the matching allowed_signers line is outside its
	// valid-after/valid-before period.
	ErrNotValidNow = errors.New("signature: signer is outside its validity period")
	// ErrCertAuthority: the only lines for the identity are cert-authority
	// lines, which Capsule does not support.
	ErrCertAuthority = errors.New("signature: cert-authority allowed signers are not supported")
	// ErrCertificate: the key is an SSH certificate, which Capsule does not support.
	ErrCertificate = errors.New("signature: certificate keys are not supported")
)

// Check verifies that sig is a well-formed capsule signature over manifest
// under the public key the signature itself names, and returns that key. It
// says nothing about whether the key is trusted: use Verify for that.
func Check(manifest, sig []byte) (ssh.PublicKey, error) {
	s, err := parse(sig)
	if err != nil {
		return nil, err
	}
	if err := sshsig.Verify(bytes.NewReader(manifest), s, s.PublicKey, s.HashAlgorithm, Namespace); err != nil {
		return nil, fmt.Errorf("%w (key %s): %v", ErrMismatch, ssh.FingerprintSHA256(s.PublicKey), err)
	}
	return s.PublicKey, nil
}

// Verify checks sig over manifest like `ssh-keygen -Y verify -f
// allowed_signers -I identity -n capsule`, at the current time.
func Verify(manifest, sig []byte, allowedSigners io.Reader, identity string) error {
	return VerifyAt(manifest, sig, allowedSigners, identity, time.Now())
}

// VerifyAt is Verify at time now, against which valid-after and
// valid-before options are checked.
func VerifyAt(manifest, sig []byte, allowedSigners io.Reader, identity string, now time.Time) error {
	key, err := Check(manifest, sig)
	if err != nil {
		return err
	}
	signers, err := ParseAllowedSigners(allowedSigners)
	if err != nil {
		return err
	}
	return trusted(signers, key, identity, now)
}

// trusted finds an allowed_signers line that lets identity sign with key
// in the capsule namespace at now, or says why there is none.
func trusted(signers []AllowedSigner, key ssh.PublicKey, identity string, now time.Time) error {
	fp := ssh.FingerprintSHA256(key)
	var why error
	sawCA := false
	for _, s := range signers {
		if !MatchPatternList(identity, s.Principals) {
			continue
		}
		if s.CertAuthority {
			sawCA = true
			continue
		}
		if !bytes.Equal(s.Key.Marshal(), key.Marshal()) {
			continue
		}
		if err := s.allows(now); err != nil {
			why = err
			continue
		}
		return nil
	}
	switch {
	case why != nil:
		return why
	case sawCA:
		return fmt.Errorf("%w (identity %q, key %s)", ErrCertAuthority, identity, fp)
	}
	return fmt.Errorf("%w: identity %q with key %s", ErrUntrusted, identity, fp)
}

// parse unarmors sig and checks its namespace and key type.
func parse(sig []byte) (*sshsig.Signature, error) {
	s, err := sshsig.Unarmor(sig)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if s.Namespace != Namespace {
		return nil, fmt.Errorf("%w: %q, want %q", ErrNamespace, s.Namespace, Namespace)
	}
	if isCert(s.PublicKey) {
		return nil, ErrCertificate
	}
	return s, nil
}
