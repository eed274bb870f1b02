package signature

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// ErrAllowedSigners: a line of an allowed_signers file cannot be parsed.
var ErrAllowedSigners = errors.New("signature: bad allowed_signers line")

// maxAllowedSigners bounds the allowed_signers file ParseAllowedSigners reads.
const maxAllowedSigners = 4 << 20

// AllowedSigner is one line of an OpenSSH allowed_signers file (see
// ssh-keygen(1), "ALLOWED SIGNERS"):
//
//	principals [options] keytype base64-key [comment]
type AllowedSigner struct {
	Line          int           // 1-based line number
	Principals    string        // comma-separated patterns, "!" negates
	Key           ssh.PublicKey // the signer's key (a CA key if CertAuthority)
	CertAuthority bool          // the cert-authority option (not supported by Verify)
	Namespaces    string        // the namespaces="…" pattern list; "" allows all
	ValidAfter    time.Time     // zero if absent
	ValidBefore   time.Time     // zero if absent
}

// allows checks the line's namespaces and validity period for a capsule
// signature verified at now.
func (s AllowedSigner) allows(now time.Time) error {
	if s.Namespaces != "" && !MatchPatternList(Namespace, s.Namespaces) {
		return fmt.Errorf("%w: line %d allows namespaces %q, not %q", ErrUntrusted, s.Line, s.Namespaces, Namespace)
	}
	if !s.ValidAfter.IsZero() && now.Before(s.ValidAfter) {
		return fmt.Errorf("%w: line %d is valid after %s", ErrNotValidNow, s.Line, s.ValidAfter.Format(time.RFC3339))
	}
	if !s.ValidBefore.IsZero() && now.After(s.ValidBefore) {
		return fmt.Errorf("%w: line %d expired at %s", ErrNotValidNow, s.Line, s.ValidBefore.Format(time.RFC3339))
	}
	return nil
}

// ParseAllowedSigners reads an allowed_signers file. Blank lines and lines
// starting with "#" are skipped; any other line that does not parse is an
// error naming its number (stricter than ssh-keygen, which skips it).
func ParseAllowedSigners(r io.Reader) ([]AllowedSigner, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxAllowedSigners+1))
	sc.Buffer(make([]byte, 0, 64<<10), maxAllowedSigners+1)
	var out []AllowedSigner
	read := 0
	for n := 1; sc.Scan(); n++ {
		read += len(sc.Bytes()) + 1
		if read > maxAllowedSigners+1 {
			return nil, fmt.Errorf("%w: file is over %d bytes", ErrAllowedSigners, maxAllowedSigners)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w %d: %v", ErrAllowedSigners, n, err)
		}
		s.Line = n
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("signature: read allowed_signers: %w", err)
	}
	return out, nil
}

func parseLine(line string) (AllowedSigner, error) {
	principals, rest, err := principalsField(line)
	if err != nil {
		return AllowedSigner{}, err
	}
	key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return AllowedSigner{}, fmt.Errorf("key: %v", err)
	}
	if isCert(key) {
		return AllowedSigner{}, errors.New("key: a certificate cannot be an allowed signer")
	}
	s := AllowedSigner{Principals: principals, Key: key}
	for _, o := range options {
		if err := s.setOption(o); err != nil {
			return AllowedSigner{}, err
		}
	}
	return s, nil
}

// principalsField splits off the first field, which may be double-quoted.
func principalsField(line string) (principals, rest string, err error) {
	if strings.HasPrefix(line, `"`) {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return "", "", errors.New("principals: unterminated quote")
		}
		principals, rest = line[1:1+end], line[2+end:]
	} else {
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			return "", "", errors.New("no key after the principals")
		}
		principals, rest = line[:i], line[i:]
	}
	if principals == "" {
		return "", "", errors.New("empty principals")
	}
	return principals, strings.TrimSpace(rest), nil
}

// setOption applies one option (names are case-insensitive, as in OpenSSH).
func (s *AllowedSigner) setOption(o string) error {
	name, value, hasValue := strings.Cut(o, "=")
	value = strings.TrimSuffix(strings.TrimPrefix(value, `"`), `"`)
	var err error
	switch strings.ToLower(name) {
	case "cert-authority":
		s.CertAuthority = true
		return nil
	case "namespaces":
		s.Namespaces = value
	case "valid-after":
		s.ValidAfter, err = parseTime(value)
	case "valid-before":
		s.ValidBefore, err = parseTime(value)
	default:
		return fmt.Errorf("unsupported option %q", name)
	}
	if !hasValue || value == "" {
		return fmt.Errorf("option %q needs a value", name)
	}
	if err != nil {
		return fmt.Errorf("option %s: %v", name, err)
	}
	return nil
}

// parseTime reads the YYYYMMDD[HHMM[SS]][Z] timestamps of ssh-keygen: in
// UTC with a trailing "Z", in local time without.
func parseTime(v string) (time.Time, error) {
	loc := time.Local
	if s, ok := strings.CutSuffix(v, "Z"); ok {
		v, loc = s, time.UTC
	}
	layouts := map[int]string{8: "20060102", 12: "200601021504", 14: "20060102150405"}
	layout, ok := layouts[len(v)]
	if !ok {
		return time.Time{}, fmt.Errorf("%q is not YYYYMMDD[HHMM[SS]][Z]", v)
	}
	return time.ParseInLocation(layout, v, loc)
}

// MatchPatternList reports whether s matches the comma-separated OpenSSH
// pattern list: some pattern matches and no negated ("!") pattern does.
// Patterns use "*" and "?" wildcards and are case-sensitive.
func MatchPatternList(s, list string) bool {
	matched := false
	for p := range strings.SplitSeq(list, ",") {
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = p[1:]
		}
		if matchPattern(s, p) {
			if neg {
				return false
			}
			matched = true
		}
	}
	return matched
}

// matchPattern matches s against a pattern of "*" (any run) and "?" (any
// one byte), iteratively so hostile patterns cannot blow the stack.
func matchPattern(s, p string) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			si++
			pi++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
