package secret

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Pass is the pass password manager (passwordstore.org): each secret is the
// entry capsule/<NAME>, encrypted with GPG to the store's keys. It is used
// when chosen (--store pass or CAPSULE_SECRET_STORE=pass) and honours
// PASSWORD_STORE_DIR and GNUPGHOME like pass itself. Values travel to pass
// on stdin, never in arguments. An entry ends with one newline, as one
// typed with plain "pass insert" does: Set adds it (pass insert --multiline
// stores the rest exactly) and Get strips it, so every value round-trips.
type Pass struct {
	// Command is the pass executable (default "pass" on $PATH).
	Command string
}

// passPrefix is the folder of Capsule's entries in the password store.
const passPrefix = "capsule/"

// Kind returns "pass".
func (*Pass) Kind() string { return KindPass }

// Get returns the value of name.
func (p *Pass) Get(name string) (string, error) {
	if err := p.check(name); err != nil {
		return "", err
	}
	if err := p.exists(name); err != nil {
		return "", err
	}
	out, err := p.run(nil, "show", passPrefix+name)
	if err != nil {
		return "", fmt.Errorf("secret: pass show %s%s: %w", passPrefix, name, err)
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// Set stores value as capsule/<name>, replacing any earlier entry.
func (p *Pass) Set(name, value string) error {
	if err := p.check(name); err != nil {
		return err
	}
	if _, err := p.run(strings.NewReader(value+"\n"), "insert", "--multiline", "--force", passPrefix+name); err != nil {
		return fmt.Errorf("secret: pass insert %s%s: %w", passPrefix, name, err)
	}
	return nil
}

// Remove deletes the entry capsule/<name>.
func (p *Pass) Remove(name string) error {
	if err := p.check(name); err != nil {
		return err
	}
	if err := p.exists(name); err != nil {
		return err
	}
	if _, err := p.run(nil, "rm", "--force", passPrefix+name); err != nil {
		return fmt.Errorf("secret: pass rm %s%s: %w", passPrefix, name, err)
	}
	return nil
}

// Names lists the entries under capsule/ in the store's folder, sorted.
func (p *Pass) Names() ([]string, error) {
	if err := p.ready(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(p.dir(), "capsule"))
	if errors.Is(err, fs.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secret: pass: %w", err)
	}
	out := []string{}
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".gpg"); ok && e.Type().IsRegular() && ValidName(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// check validates name, then that the store is ready.
func (p *Pass) check(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	return p.ready()
}

// ready checks that pass is installed and its store initialised.
func (p *Pass) ready() error {
	if _, err := exec.LookPath(p.command()); err != nil {
		return fmt.Errorf("%w: pass is not installed (%v): install it (Debian: apt-get install pass) or use --store keyring or --store file", ErrUnavailable, err)
	}
	if _, err := os.Stat(filepath.Join(p.dir(), ".gpg-id")); err != nil {
		return fmt.Errorf("%w: the password store %s is not initialised: run pass init GPG-ID", ErrUnavailable, p.dir())
	}
	return nil
}

// exists returns a *NotFoundError unless the entry's file is there.
func (p *Pass) exists(name string) error {
	_, err := os.Stat(filepath.Join(p.dir(), passPrefix+name+".gpg"))
	if errors.Is(err, fs.ErrNotExist) {
		return &NotFoundError{Name: name, Store: KindPass}
	}
	if err != nil {
		return fmt.Errorf("secret: pass: %w", err)
	}
	return nil
}

// run runs pass with stdin and returns its stdout; stderr (which never
// holds a value) goes into the error.
func (p *Pass) run(stdin *strings.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command(p.command(), args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errOut.String()); msg != "" {
			return nil, fmt.Errorf("%w: %s", err, msg)
		}
		return nil, err
	}
	return out.Bytes(), nil
}

func (p *Pass) command() string {
	if p.Command != "" {
		return p.Command
	}
	return "pass"
}

// dir is the password store's folder, as pass finds it.
func (p *Pass) dir() string {
	if d := os.Getenv("PASSWORD_STORE_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".password-store")
}
