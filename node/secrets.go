package node

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentcapsule/capsule/secret"
	"github.com/agentcapsule/capsule/vfs"
)

// SecretsFile is the file store's file inside the data folder: a JSON
// object of secret names to values, mode 0600 (package secret, File).
const SecretsFile = secret.FileName

// SecretEnvPrefix starts the name of an environment variable that provides a
// secret: CAPSULE_SECRET_OPENAI_API_KEY provides the secret OPENAI_API_KEY.
const SecretEnvPrefix = secret.EnvPrefix

// ErrSecretsMode is returned when the secrets file can be read by others.
var ErrSecretsMode = secret.ErrFileMode

// Secrets looks up secret values by name: in the node's store, then in the
// CAPSULE_SECRET_ environment. Values are read at the moment of each
// lookup, held only by the caller that needs them, and never written
// anywhere else or logged. The zero value holds nothing.
type Secrets struct {
	store  secret.Store
	getenv func(string) string
}

// OpenSecrets opens the default store for the data folder dir (see
// OpenSecretStore) and falls back to the environment through getenv (nil:
// no environment).
func OpenSecrets(fsys vfs.FS, dir string, getenv func(string) string) (*Secrets, error) {
	return OpenSecretStore(fsys, dir, "", getenv)
}

// OpenSecretStore opens the store of kind ("keyring", "pass", "file"; ""
// is $CAPSULE_SECRET_STORE, else the file store when dir/secrets.json
// exists, else the kernel keyring) with the environment after it. A
// secrets file readable by group or others, or one that is not a JSON
// object of strings, is refused now rather than at the first lookup.
func OpenSecretStore(fsys vfs.FS, dir, kind string, getenv func(string) string) (*Secrets, error) {
	env := getenv
	if env == nil {
		env = func(string) string { return "" }
	}
	st, err := secret.Config{Kind: kind, Dir: dir, FS: fsys, Getenv: env}.Open()
	if err != nil {
		return nil, fmt.Errorf("node: secrets: %w", err)
	}
	if f, ok := st.(*secret.File); ok {
		if _, err := f.Names(); err != nil {
			return nil, err
		}
	}
	return &Secrets{store: st, getenv: getenv}, nil
}

// Store names the store secrets are looked up in first ("" for none).
func (s *Secrets) Store() string {
	if s == nil || s.store == nil {
		return ""
	}
	return s.store.Kind()
}

// Resolve returns the value of the secret name: from the store, else from
// CAPSULE_SECRET_<name>. When neither has it, the error is the store's
// (a *secret.NotFoundError, or why the store could not be read); it never
// holds a value.
func (s *Secrets) Resolve(name string) (string, error) {
	if s == nil {
		return "", &secret.NotFoundError{Name: name, Store: "node"}
	}
	err := error(&secret.NotFoundError{Name: name, Store: "env"})
	if s.store != nil {
		v, serr := s.store.Get(name)
		if serr == nil {
			return v, nil
		}
		err = serr
	}
	if s.getenv != nil && secret.ValidName(name) {
		if v := s.getenv(SecretEnvPrefix + name); v != "" {
			return v, nil
		}
	}
	return "", err
}

// Lookup returns the value of the secret name and whether it has one.
func (s *Secrets) Lookup(name string) (string, bool) {
	v, err := s.Resolve(name)
	return v, err == nil
}

// Missing returns the names in names that have no value here, sorted.
func (s *Secrets) Missing(names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := s.Lookup(n); !ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Names returns the names held in the store (never the values), sorted;
// none when the store cannot be read.
func (s *Secrets) Names() []string {
	if s == nil || s.store == nil {
		return []string{}
	}
	names, err := s.store.Names()
	if err != nil {
		return []string{}
	}
	return names
}

// MissingSecretsError names the secrets an agent needs that the node lacks.
type MissingSecretsError struct{ Names []string }

// Error names the missing secrets (names only, never values).
func (e *MissingSecretsError) Error() string {
	return "node: missing secrets: " + strings.Join(e.Names, ", ")
}
