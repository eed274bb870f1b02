package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentcapsule/capsule/vfs"
)

// SecretsFile is the node's secret store inside the data folder: a JSON
// object of secret names to values, mode 0600. Values are read into memory
// for one run of an agent and never written anywhere else or logged.
const SecretsFile = "secrets.json"

// SecretEnvPrefix starts the name of an environment variable that provides a
// secret: CAPSULE_SECRET_OPENAI_API_KEY provides the secret OPENAI_API_KEY.
const SecretEnvPrefix = "CAPSULE_SECRET_"

// ErrSecretsMode is returned when the secrets file can be read by others.
var ErrSecretsMode = errors.New("node: secrets file must have mode 0600")

// Secrets looks up secret values by name. The zero value holds nothing.
type Secrets struct {
	file   map[string]string
	getenv func(string) string
}

// OpenSecrets loads DIR/secrets.json (a missing file is empty) and falls
// back to the environment through getenv (nil: no environment). A file
// readable by group or others is refused rather than trusted.
func OpenSecrets(fsys vfs.FS, dir string, getenv func(string) string) (*Secrets, error) {
	s := &Secrets{file: map[string]string{}, getenv: getenv}
	name := filepath.Join(dir, SecretsFile)
	fi, err := fsys.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is %v", ErrSecretsMode, name, fi.Mode().Perm())
	}
	data, err := vfs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if err := json.Unmarshal(data, &s.file); err != nil {
		// The error of encoding/json may quote input; name only the file.
		return nil, fmt.Errorf("secrets: %s is not a JSON object of strings", name)
	}
	return s, nil
}

// Lookup returns the value of the secret name.
func (s *Secrets) Lookup(name string) (string, bool) {
	if s == nil {
		return "", false
	}
	if v, ok := s.file[name]; ok {
		return v, true
	}
	if s.getenv != nil {
		if v := s.getenv(SecretEnvPrefix + name); v != "" {
			return v, true
		}
	}
	return "", false
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

// Names returns the names held in the file (never the values), sorted.
func (s *Secrets) Names() []string {
	out := make([]string, 0, len(s.file))
	for n := range s.file {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// MissingSecretsError names the secrets an agent needs that the node lacks.
type MissingSecretsError struct{ Names []string }

// Error names the missing secrets (names only, never values).
func (e *MissingSecretsError) Error() string {
	return "node: missing secrets: " + strings.Join(e.Names, ", ")
}
