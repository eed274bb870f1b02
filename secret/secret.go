// Package secret owns the host's secret stores: where the values of the
// secrets an environment spec names (docs/FORMAT.md §6) live on the host,
// and how they are scrubbed from text before anything is journaled.
//
// A value lives in exactly one store and is read at the moment of use; it
// never enters a capsule, the journal, a log line or an error message. The
// stores are the Linux kernel user keyring (the default on Linux; nothing
// touches disk), the pass password manager, and a 0600 JSON file (the
// weakest, for CI and containers). Env is a read-only fallback on
// CAPSULE_SECRET_<NAME> variables.
//
// Every method of every store checks the name (ValidName) before it touches
// the store. Package secret may be imported by node and cmd/capsule; the
// pure packages never import it.
package secret

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/agentcapsule/capsule/vfs"
)

// Store holds secret values by name.
type Store interface {
	// Get returns the value of name, or a *NotFoundError.
	Get(name string) (string, error)
	// Set stores value under name, replacing any earlier value.
	Set(name, value string) error
	// Remove deletes name, or returns a *NotFoundError.
	Remove(name string) error
	// Names lists the names held, sorted; never values.
	Names() ([]string, error)
	// Kind names the store: "keyring", "pass", "file", "env" or "mem".
	Kind() string
}

// The kinds of store Open knows.
const (
	KindKeyring = "keyring"
	KindPass    = "pass"
	KindFile    = "file"
)

// StoreEnv is the environment variable that chooses the store when no kind
// is given.
const StoreEnv = "CAPSULE_SECRET_STORE"

// ErrNotFound matches every *NotFoundError under errors.Is.
var ErrNotFound = errors.New("secret: not found")

// ErrInvalidName is returned for a name outside the environment spec's rule.
var ErrInvalidName = errors.New("secret: invalid name")

// ErrReadOnly is returned by stores that cannot be written (Env).
var ErrReadOnly = errors.New("secret: store is read-only")

// ErrUnavailable is returned when a store cannot work on this host: the
// keyring blocked by a container's seccomp profile, pass not installed.
var ErrUnavailable = errors.New("secret: store unavailable")

// NotFoundError says that a store holds no secret of that name.
type NotFoundError struct {
	Name  string
	Store string
}

// Error names the secret and the store.
func (e *NotFoundError) Error() string {
	return fmt.Sprintf("secret: no secret %s in the %s store", e.Name, e.Store)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// maxName is the longest name the environment spec allows.
const maxName = 256

// ValidName reports whether name follows the environment spec's rule for a
// secret name (docs/FORMAT.md §6.1): [A-Za-z_][A-Za-z0-9_]*, at most 256 bytes.
func ValidName(name string) bool {
	if name == "" || len(name) > maxName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// CheckName returns ErrInvalidName, with the name clipped, unless ValidName.
func CheckName(name string) error {
	if ValidName(name) {
		return nil
	}
	if len(name) > 40 {
		name = name[:40] + "..."
	}
	return fmt.Errorf("%w %q: must match [A-Za-z_][A-Za-z0-9_]* and be at most %d bytes", ErrInvalidName, name, maxName)
}

// Config chooses and configures a store. The zero value opens the default
// store with the real file system and environment.
type Config struct {
	// Kind is "keyring", "pass", "file" or "" (the default, see Open).
	Kind string
	// Dir is the node's data folder; the file store is Dir/secrets.json.
	Dir string
	// FS is the file system of the file store (default vfs.OS{}).
	FS vfs.FS
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
}

// Open opens the store of kind for the data folder dataDir: kind "keyring",
// "pass", "file" or "" for the default (see Config.Open).
func Open(kind, dataDir string) (Store, error) {
	return Config{Kind: kind, Dir: dataDir}.Open()
}

// Open opens the configured store. An empty Kind takes $CAPSULE_SECRET_STORE;
// if that is empty too it is "file" when Dir/secrets.json exists (a node set
// up with the file store keeps using it) and otherwise "keyring" on Linux.
// Opening touches no store: a store that cannot work here says so on use.
func (c Config) Open() (Store, error) {
	if c.FS == nil {
		c.FS = vfs.OS{}
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	kind, err := c.kind()
	if err != nil {
		return nil, err
	}
	switch kind {
	case KindKeyring:
		return Keyring{}, nil
	case KindPass:
		return &Pass{}, nil
	case KindFile:
		if c.Dir == "" {
			return nil, errors.New("secret: the file store needs the data folder (--data or CAPSULE_DATA)")
		}
		return NewFile(c.FS, filepath.Join(c.Dir, FileName)), nil
	}
	return nil, fmt.Errorf("secret: unknown store %q: want keyring, pass or file", kind)
}

// kind resolves an empty Kind to the default.
func (c Config) kind() (string, error) {
	if c.Kind != "" {
		return c.Kind, nil
	}
	if k := c.Getenv(StoreEnv); k != "" {
		return k, nil
	}
	if c.Dir != "" {
		if _, err := c.FS.Stat(filepath.Join(c.Dir, FileName)); err == nil {
			return KindFile, nil
		}
	}
	if runtime.GOOS == "linux" {
		return KindKeyring, nil
	}
	return "", fmt.Errorf("%w: no default store on %s: choose --store pass or --store file", ErrUnavailable, runtime.GOOS)
}
