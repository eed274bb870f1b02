package secret

import (
	"os"
	"sort"
	"strings"
)

// EnvPrefix starts the name of an environment variable that provides a
// secret: CAPSULE_SECRET_OPENAI_API_KEY provides OPENAI_API_KEY.
const EnvPrefix = "CAPSULE_SECRET_"

// Env is the read-only store of CAPSULE_SECRET_<NAME> variables, the
// fallback after the configured store. An empty variable holds nothing.
type Env struct {
	// Getenv reads one variable (nil: os.Getenv).
	Getenv func(string) string
	// Environ lists the environment for Names (nil: os.Environ).
	Environ func() []string
}

// Kind returns "env".
func (Env) Kind() string { return "env" }

// Get returns the value of CAPSULE_SECRET_<name>.
func (e Env) Get(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	get := e.Getenv
	if get == nil {
		get = os.Getenv
	}
	if v := get(EnvPrefix + name); v != "" {
		return v, nil
	}
	return "", &NotFoundError{Name: name, Store: "env"}
}

// Set refuses: the environment is read-only.
func (Env) Set(name, value string) error { return ErrReadOnly }

// Remove refuses: the environment is read-only.
func (Env) Remove(name string) error { return ErrReadOnly }

// Names lists the names of the non-empty CAPSULE_SECRET_ variables.
func (e Env) Names() ([]string, error) {
	environ := e.Environ
	if environ == nil {
		environ = os.Environ
	}
	var out []string
	for _, kv := range environ() {
		k, v, _ := strings.Cut(kv, "=")
		if n, ok := strings.CutPrefix(k, EnvPrefix); ok && v != "" && ValidName(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}
