package archive

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ManifestName and SignatureName are the two entries every signed archive
// holds at its root (FORMAT §8.1, §10).
const (
	ManifestName  = "manifest.json"
	SignatureName = "manifest.json.sig"
)

// cleanName checks an entry name against FORMAT §9.1 and returns it in its
// canonical form: no leading "./", no trailing "/". The lone entry "./" (the
// root, written by `tar -C dir -cf x.tar .`) cleans to "". maxLen bounds the
// name's length in bytes.
func cleanName(raw string, isDir bool, maxLen int) (string, error) {
	if len(raw) > maxLen {
		return "", rule(ErrLimit, fmt.Sprintf("name is %d bytes, limit %d", len(raw), maxLen))
	}
	if !utf8.ValidString(raw) {
		return "", rule(ErrUnsafePath, "name is not valid UTF-8")
	}
	for _, r := range raw {
		switch {
		case r < 0x20 || r == 0x7f:
			return "", rule(ErrUnsafePath, fmt.Sprintf("name holds control character %U", r))
		case r == '\\' || r == ':':
			return "", rule(ErrUnsafePath, fmt.Sprintf("name holds %q", r))
		}
	}
	if strings.HasPrefix(raw, "/") {
		return "", rule(ErrUnsafePath, "absolute path")
	}
	name := raw
	if isDir {
		name = strings.TrimSuffix(name, "/")
	} else if strings.HasSuffix(name, "/") {
		return "", rule(ErrUnsafePath, "file name ends with /")
	}
	for strings.HasPrefix(name, "./") {
		name = name[2:]
	}
	if name == "." || name == "" {
		if isDir {
			return "", nil
		}
		return "", rule(ErrUnsafePath, "empty name")
	}
	return name, checkComponents(name)
}

// checkComponents refuses empty, "." and ".." components and over-long ones.
func checkComponents(name string) error {
	for c := range strings.SplitSeq(name, "/") {
		switch {
		case c == "":
			return rule(ErrUnsafePath, "empty path component")
		case c == ".":
			return rule(ErrUnsafePath, "\".\" component")
		case c == "..":
			return rule(ErrUnsafePath, "\"..\" component")
		case len(c) > maxComponentLen:
			return rule(ErrLimit, fmt.Sprintf("component is %d bytes, limit %d", len(c), maxComponentLen))
		}
	}
	return nil
}

// foldName is the key under which names that differ only by case collide.
// It folds with Unicode simple case mapping, as case-insensitive file systems
// (APFS, NTFS) do for most scripts.
func foldName(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			return strings.ToLower(strings.ToUpper(name))
		}
	}
	return strings.ToLower(name) // the same for ASCII, and no copy when already lower case
}

// ruleError is a broken rule of FORMAT §9.1: the sentinel and what exactly.
type ruleError struct {
	err    error
	detail string
}

func rule(err error, detail string) error { return &ruleError{err, detail} }

func (e *ruleError) Error() string { return e.err.Error() + ": " + e.detail }
func (e *ruleError) Unwrap() error { return e.err }
