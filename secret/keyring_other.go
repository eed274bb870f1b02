//go:build !linux

package secret

import "fmt"

func errNoKeyring() error {
	return fmt.Errorf("%w: the kernel keyring exists only on Linux: use --store pass or --store file (or CAPSULE_SECRET_STORE)", ErrUnavailable)
}

// Get fails: no kernel keyring here.
func (Keyring) Get(name string) (string, error) { return "", errNoKeyring() }

// Set fails: no kernel keyring here.
func (Keyring) Set(name, value string) error { return errNoKeyring() }

// Remove fails: no kernel keyring here.
func (Keyring) Remove(name string) error { return errNoKeyring() }

// Names fails: no kernel keyring here.
func (Keyring) Names() ([]string, error) { return nil, errNoKeyring() }
