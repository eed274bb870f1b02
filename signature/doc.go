// Package signature signs and verifies a capsule's manifest with SSH keys,
// in the SSHSIG format of `ssh-keygen -Y sign` (namespace "capsule", hash
// sha512), so anyone can check an exported capsule with the tools they
// already have (docs/FORMAT.md §10).
//
// A signature attests one exported state: it is made at export time over
// the exact manifest.json bytes in the archive and stored beside it as
// manifest.json.sig. A live capsule folder never keeps one.
//
// Trust comes from an OpenSSH allowed_signers file (ParseAllowedSigners);
// Check alone only says whether a signature matches the manifest under the
// key it names. The package is imported by archive and cmd.
package signature
