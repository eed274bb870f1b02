package secret

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/agentcapsule/capsule/vfs"
)

// FileName is the file store's file inside a node's data folder.
const FileName = "secrets.json"

// ErrFileMode is returned when the secrets file can be read by group or
// others: such a file is refused rather than trusted.
var ErrFileMode = errors.New("secret: secrets file must have mode 0600")

// File is the weakest store: one JSON object of names to values in a file
// of mode 0600 (DATA/secrets.json, the format nodes have always read, so
// old files keep working). The values sit on disk in clear, protected only
// by the file's mode; use it for CI and containers, where neither the
// keyring nor pass is available. Every read opens the file again, so a node
// sees a value set after it started. Set replaces the file atomically
// (temporary file, fsync, rename, fsync of the directory); two concurrent
// Sets may lose one of the two updates.
type File struct {
	fsys vfs.FS
	path string
}

// NewFile returns the file store at path on fsys (nil: the OS).
func NewFile(fsys vfs.FS, path string) *File {
	if fsys == nil {
		fsys = vfs.OS{}
	}
	return &File{fsys: fsys, path: path}
}

// Kind returns "file".
func (*File) Kind() string { return KindFile }

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Get returns the value of name.
func (f *File) Get(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	m, err := f.load()
	if err != nil {
		return "", err
	}
	v, ok := m[name]
	if !ok {
		return "", &NotFoundError{Name: name, Store: KindFile}
	}
	return v, nil
}

// Set stores value under name, rewriting the file.
func (f *File) Set(name, value string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	m, err := f.load()
	if err != nil {
		return err
	}
	m[name] = value
	return f.save(m)
}

// Remove deletes name, rewriting the file.
func (f *File) Remove(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	m, err := f.load()
	if err != nil {
		return err
	}
	if _, ok := m[name]; !ok {
		return &NotFoundError{Name: name, Store: KindFile}
	}
	delete(m, name)
	return f.save(m)
}

// Names lists the names in the file, sorted. It also checks the file: a
// mode readable by others or a body that is not a JSON object of strings
// is an error.
func (f *File) Names() ([]string, error) {
	m, err := f.load()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// load reads the file; a missing file is empty.
func (f *File) load() (map[string]string, error) {
	m := map[string]string{}
	fi, err := f.fsys.Stat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is %v (chmod 600 %s)", ErrFileMode, f.path, fi.Mode().Perm(), f.path)
	}
	data, err := vfs.ReadFile(f.fsys, f.path)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		// encoding/json's errors may quote the input: name only the file.
		return nil, fmt.Errorf("secret: %s is not a JSON object of strings", f.path)
	}
	return m, nil
}

// save writes m atomically with mode 0600, creating the folder (0700).
func (f *File) save(m map[string]string) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("secret: encode %s: %w", f.path, err)
	}
	if err := vfs.MkdirAllDurable(f.fsys, filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	if err := vfs.WriteFile(f.fsys, f.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	return nil
}
