package secret

// Keyring is the Linux kernel's user keyring (KEY_SPEC_USER_KEYRING): each
// secret is a key of type "user" described "capsule:<NAME>". Keys live in
// kernel memory only, nothing touches disk, and they last until removed or
// the machine restarts: right for the keys of one run. Every process of the
// same user can read them, a daemon started in another session among them,
// because Set grants the user (not only the key's possessor) view, read,
// write and search; no other user can.
//
// Containers often block the keyctl system calls with seccomp; the keyring
// then fails with ErrUnavailable, naming the other stores. On systems other
// than Linux it always does.
type Keyring struct{}

// keyPrefix starts the description of every key Capsule stores.
const keyPrefix = "capsule:"

// Kind returns "keyring".
func (Keyring) Kind() string { return KindKeyring }
