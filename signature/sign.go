package signature

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Namespace is the SSHSIG namespace of every capsule signature; verify with
// `ssh-keygen -Y verify -n capsule`.
const Namespace = "capsule"

// FileName is the name of the signature file beside manifest.json.
const FileName = "manifest.json.sig"

// HashAlgorithm is the hash Sign uses, the same default as ssh-keygen.
const HashAlgorithm = sshsig.HashSHA512

// armorLineLen is the width ssh-keygen wraps the armored base64 at.
const armorLineLen = 70

// Sign signs manifest with signer and returns the armored signature, byte
// for byte what `ssh-keygen -Y sign -n capsule` writes for the same key and
// bytes (for deterministic key types: ed25519 and RSA).
func Sign(manifest []byte, signer ssh.Signer) ([]byte, error) {
	if isCert(signer.PublicKey()) {
		return nil, fmt.Errorf("signature: sign: %w", ErrCertificate)
	}
	sig, err := sshsig.Sign(bytes.NewReader(manifest), signer, HashAlgorithm, Namespace)
	if err != nil {
		return nil, fmt.Errorf("signature: sign: %w", err)
	}
	return armor(sig.Marshal()), nil
}

// armor wraps a wire-format signature as ssh-keygen does.
func armor(blob []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(blob)
	var b bytes.Buffer
	b.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(enc) > armorLineLen {
		b.WriteString(enc[:armorLineLen])
		b.WriteByte('\n')
		enc = enc[armorLineLen:]
	}
	b.WriteString(enc)
	b.WriteString("\n-----END SSH SIGNATURE-----\n")
	return b.Bytes()
}

func isCert(k ssh.PublicKey) bool {
	_, ok := k.(*ssh.Certificate)
	return ok
}
