package secret

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// keyPerm is possessor all, plus view, read, write and search for every
// process of the key's user (the default grants the user only view, which
// would hide the key from a process in another session).
const keyPerm = 0x3f000000 | 0x000f0000

// Get returns the value of name.
func (k Keyring) Get(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	id, err := k.find(name)
	if err != nil {
		return "", err
	}
	b, err := readKey(id)
	if err != nil {
		return "", keyError("read", name, err)
	}
	return string(b), nil
}

// Set adds or replaces the key capsule:<name> in the user keyring.
func (Keyring) Set(name, value string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	id, err := unix.AddKey("user", keyPrefix+name, []byte(value), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		return keyError("add", name, err)
	}
	if err := unix.KeyctlSetperm(id, keyPerm); err != nil {
		return keyError("set permissions of", name, err)
	}
	return nil
}

// Remove unlinks the key capsule:<name> from the user keyring.
func (k Keyring) Remove(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	id, err := k.find(name)
	if err != nil {
		return err
	}
	if _, err := unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0); err != nil {
		return keyError("unlink", name, err)
	}
	return nil
}

// Names lists the capsule: keys of the user keyring, sorted. Keys this
// process may not view are skipped.
func (Keyring) Names() ([]string, error) {
	b, err := readKey(unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		return nil, keyError("list", "", err)
	}
	var out []string
	for i := 0; i+4 <= len(b); i += 4 {
		id := int(int32(binary.NativeEndian.Uint32(b[i : i+4])))
		d, err := unix.KeyctlString(unix.KEYCTL_DESCRIBE, id)
		if err != nil {
			continue
		}
		// type;uid;gid;perm;description (the description may hold ';').
		f := strings.SplitN(d, ";", 5)
		if len(f) == 5 && f[0] == "user" && strings.HasPrefix(f[4], keyPrefix) && ValidName(f[4][len(keyPrefix):]) {
			out = append(out, f[4][len(keyPrefix):])
		}
	}
	sort.Strings(out)
	return out, nil
}

// find searches the user keyring for capsule:<name>.
func (Keyring) find(name string) (int, error) {
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", keyPrefix+name, 0)
	if errors.Is(err, unix.ENOKEY) || errors.Is(err, unix.EKEYREVOKED) || errors.Is(err, unix.EKEYEXPIRED) {
		return 0, &NotFoundError{Name: name, Store: KindKeyring}
	}
	if err != nil {
		return 0, keyError("search for", name, err)
	}
	return id, nil
}

// readKey reads a key's payload, growing the buffer until it fits.
func readKey(id int) ([]byte, error) {
	buf := make([]byte, 512)
	for {
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
		if err != nil {
			return nil, err
		}
		if n <= len(buf) {
			return buf[:n], nil
		}
		buf = make([]byte, n)
	}
}

// keyError wraps a keyctl error; EPERM and ENOSYS (seccomp, or no keyring
// support) become ErrUnavailable with the way out.
func keyError(op, name string, err error) error {
	what := "keyring: " + op
	if name != "" {
		what += " " + keyPrefix + name
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("%w: the kernel keyring is not permitted here (%s: %v; a container's seccomp profile may block keyctl): use --store pass or --store file (or CAPSULE_SECRET_STORE)", ErrUnavailable, what, err)
	}
	return fmt.Errorf("secret: %s: %w", what, err)
}
