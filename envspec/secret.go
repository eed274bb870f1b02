package envspec

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Sentinel errors callers branch on.
var (
	// ErrInvalid marks a spec that is not well formed; the error is a
	// *ParseError naming every problem.
	ErrInvalid = errors.New("envspec: invalid")
	// ErrSecretName marks a plain variable whose name looks like a secret.
	ErrSecretName = errors.New("envspec: variable name looks like a secret")
	// ErrSecretValue marks a plain value that looks like a credential.
	ErrSecretValue = errors.New("envspec: value looks like a credential")
	// ErrConflict marks a name used both as a variable and as a secret.
	ErrConflict = errors.New("envspec: name is both a variable and a secret")
)

// SecretWords are the words that make a variable name a secret's name when
// it contains one of them, case-insensitively (FORMAT §6.2).
var SecretWords = []string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE"}

// SecretNameError is a plain variable whose name contains a SecretWords entry.
type SecretNameError struct {
	Name, Word string
}

// Error tells the user to declare the variable as a secret instead.
func (e *SecretNameError) Error() string {
	return fmt.Sprintf("envspec: variable %s contains %q, so it must be a secret: declare it with `capsule env secret add DIR %s` and let the host supply its value", e.Name, e.Word, e.Name)
}

// Unwrap makes errors.Is(err, ErrSecretName) true.
func (e *SecretNameError) Unwrap() error { return ErrSecretName }

// SecretValueError is a plain value that looks like a credential. It names
// the variable and the reason, never the value.
type SecretValueError struct {
	Name, Reason string
}

// Error explains the refusal without echoing the value.
func (e *SecretValueError) Error() string {
	return fmt.Sprintf("envspec: the value of %s looks like a credential (%s); a capsule never stores secret values: declare it with `capsule env secret add DIR %s` and let the host supply it", e.Name, e.Reason, e.Name)
}

// Unwrap makes errors.Is(err, ErrSecretValue) true.
func (e *SecretValueError) Unwrap() error { return ErrSecretValue }

// CheckVar checks one plain variable: its name must be a valid name that
// does not look like a secret, and its value must not look like a credential.
func CheckVar(name, value string) error {
	if !validName(name) {
		return fmt.Errorf("%w: variable name %q must match [A-Za-z_][A-Za-z0-9_]*", ErrInvalid, clip(name))
	}
	upper := strings.ToUpper(name)
	for _, w := range SecretWords {
		if strings.Contains(upper, w) {
			return &SecretNameError{Name: name, Word: w}
		}
	}
	if reason := CredentialReason(value); reason != "" {
		return &SecretValueError{Name: name, Reason: reason}
	}
	return nil
}

// keyPrefix is a well-known API-key prefix and the least number of token
// characters that must follow it.
type keyPrefix struct {
	prefix, vendor string
	min            int
}

// keyPrefixes are the prefixes of common API keys (FORMAT §6.2). Longer
// prefixes come first so the reason names the most specific vendor.
var keyPrefixes = []keyPrefix{
	{"sk-ant-", "Anthropic API key", 20}, {"sk-proj-", "OpenAI project key", 20}, {"sk-", "OpenAI-style secret key", 20},
	{"github_pat_", "GitHub fine-grained token", 20}, {"ghp_", "GitHub token", 30}, {"gho_", "GitHub OAuth token", 30},
	{"ghu_", "GitHub user token", 30}, {"ghs_", "GitHub server token", 30}, {"ghr_", "GitHub refresh token", 30},
	{"xoxb-", "Slack bot token", 10}, {"xoxp-", "Slack user token", 10}, {"xoxa-", "Slack token", 10},
	{"xoxr-", "Slack refresh token", 10}, {"xoxs-", "Slack token", 10}, {"xapp-", "Slack app token", 10},
	{"glpat-", "GitLab token", 20}, {"hf_", "Hugging Face token", 30}, {"npm_", "npm token", 30},
	{"pypi-", "PyPI token", 30}, {"sk_live_", "Stripe secret key", 16}, {"rk_live_", "Stripe key", 16},
	{"sk_test_", "Stripe test key", 16}, {"dop_v1_", "DigitalOcean token", 32}, {"shpat_", "Shopify token", 20},
	{"AIza", "Google API key", 35}, {"AKIA", "AWS access key ID", 16}, {"ASIA", "AWS temporary access key ID", 16},
}

var (
	// tokenRun is a run of characters that keys and base64 are made of.
	tokenRun = regexp.MustCompile(`[A-Za-z0-9+/=_-]+`)
	// jwt is a JSON Web Token: three base64url parts, the first two JSON objects.
	jwt = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)
	// urlPassword is a URL with a password in its user info.
	urlPassword = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@`)
)

// High-entropy rule (FORMAT §6.2): a run of at least MinSecretLen characters
// of the base64 alphabet is a credential when its Shannon entropy is at least
// EntropyThreshold bits per character, it mixes at least two of lower case,
// upper case and digits, and fewer than MaxVowelRatio of its letters are
// vowels. Random keys score 4.4 to 5 bits with about 19% vowels (about nine in
// ten random 32-character keys are caught, more when longer); words, paths and
// camel-case names have 35-45% vowels; lower-case hex (commit hashes,
// digests) stays under 4 bits. The name rule and the key prefixes are the
// first line of defence; this rule catches keys without a known prefix.
const (
	MinSecretLen     = 32
	EntropyThreshold = 4.0
	MaxVowelRatio    = 0.3
)

// CredentialReason returns why value looks like a credential, or "" if it
// does not. The reason never contains any part of the value.
func CredentialReason(value string) string {
	if strings.Contains(value, "-----BEGIN") && strings.Contains(value, "PRIVATE KEY") {
		return "a PEM private key block"
	}
	if jwt.MatchString(value) {
		return "a JSON Web Token"
	}
	if urlPassword.MatchString(value) {
		return "a URL with a password in it"
	}
	for _, tok := range tokenRun.FindAllString(value, -1) {
		if r := tokenReason(tok); r != "" {
			return r
		}
	}
	return ""
}

func tokenReason(tok string) string {
	for _, p := range keyPrefixes {
		if rest, ok := strings.CutPrefix(tok, p.prefix); ok && len(rest) >= p.min && keyChars(rest) {
			return "it starts like a " + p.vendor
		}
	}
	if len(tok) >= MinSecretLen && highEntropy(tok) {
		return fmt.Sprintf("a random-looking string of %d characters", len(tok))
	}
	return ""
}

func keyChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if classOf(s[i]) == other && s[i] != '_' && s[i] != '-' {
			return false
		}
	}
	return true
}

const (
	lower = iota
	upper
	digit
	other
)

func classOf(c byte) int {
	switch {
	case 'a' <= c && c <= 'z':
		return lower
	case 'A' <= c && c <= 'Z':
		return upper
	case '0' <= c && c <= '9':
		return digit
	}
	return other
}

func highEntropy(s string) bool {
	var seen [4]bool
	letters, vowels := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		cl := classOf(c)
		seen[cl] = true
		if cl == lower || cl == upper {
			letters++
			if strings.IndexByte("aeiouAEIOU", c) >= 0 {
				vowels++
			}
		}
	}
	mixed := 0
	for _, b := range seen[:other] {
		if b {
			mixed++
		}
	}
	return mixed >= 2 && Entropy(s) >= EntropyThreshold &&
		float64(vowels) < MaxVowelRatio*float64(letters)
}

// Entropy returns the Shannon entropy of s in bits per byte.
func Entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h := 0.0
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
