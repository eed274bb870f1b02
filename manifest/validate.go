package manifest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/schema"
)

// Limits on free-form strings (FORMAT §2.2).
const (
	maxLabel   = 256  // agent name, node ID, machine ID, release, commit
	maxPathLen = 4096 // a path inside a capsule or a snapshot
)

// Validate checks m against FORMAT §2 and returns a *ParseError naming every
// problem, or nil. It does not check schema versions (see CheckVersions).
func (m *Manifest) Validate() error {
	if probs := m.problems(); len(probs) > 0 {
		return &ParseError{Problems: probs}
	}
	return nil
}

// VersionErrors lists every kind of state (and the format itself) whose
// version this release cannot read, in schema.Kinds order.
func (m *Manifest) VersionErrors() []*VersionError {
	var out []*VersionError
	if m.Format < 1 || m.Format > FormatVersion {
		out = append(out, &VersionError{Kind: "manifest", Got: m.Format, Max: FormatVersion, Writer: safeRelease(m.Writer.Release)})
	}
	for _, k := range schema.Kinds {
		if v, ok := m.Schemas[k]; ok && !schema.CanRead(k, v) {
			out = append(out, &VersionError{Kind: string(k), Got: v, Max: schema.Current[k], Writer: safeRelease(m.Writer.Release)})
		}
	}
	return out
}

// CheckVersions returns nil if this release can read every kind of state
// the manifest lists, else the VersionErrors joined (errors.Is ErrUnsupported).
func (m *Manifest) CheckVersions() error {
	var errs []error
	for _, e := range m.VersionErrors() {
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

func (m *Manifest) problems() []Problem {
	var p problemList
	if m.Format != FormatVersion {
		p.add("format", "is %d, want %d", m.Format, FormatVersion)
	}
	m.Agent.check(&p)
	m.Holder.check(&p)
	checkSchemas(&p, m.Schemas, m.Format)
	checkLabel(&p, "writer.release", m.Writer.Release, false)
	checkLabel(&p, "writer.commit", m.Writer.Commit, true)
	m.Journal.check(&p)
	checkFiles(&p, m.Files)
	for k := range m.Extensions {
		if k == "" {
			p.add("extensions", "a member has an empty name")
		}
	}
	return p.sorted()
}

type problemList []Problem

func (p *problemList) add(field, format string, args ...any) {
	*p = append(*p, Problem{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// sorted orders problems by field so the report is stable.
func (p problemList) sorted() []Problem {
	sort.SliceStable(p, func(i, j int) bool { return p[i].Field < p[j].Field })
	return p
}

func (a Agent) check(p *problemList) {
	if !IsULID(a.ID) {
		p.add("agent.id", "%q is not a ULID (26 Crockford base32 characters)", clip(a.ID))
	}
	checkLabel(p, "agent.name", a.Name, true)
	if !IsTimestamp(a.Created) {
		p.add("agent.created", "%q is not an RFC 3339 time in UTC (e.g. 2026-01-02T15:04:05Z)", clip(a.Created))
	}
}

func (h Holder) check(p *problemList) {
	checkLabel(p, "holder.node", h.Node, true)
	if h.Epoch > 0 && h.Node == "" {
		p.add("holder.node", "is empty but holder.epoch is %d; a held capsule names its node", h.Epoch)
	}
}

func checkSchemas(p *problemList, s map[schema.Kind]int, format int) {
	for _, k := range schema.Kinds {
		v, ok := s[k]
		switch {
		case !ok:
			p.add("schemas."+string(k), "missing")
		case v < 1:
			p.add("schemas."+string(k), "is %d, versions start at 1", v)
		}
	}
	for k := range s {
		if _, ok := schema.Current[k]; !ok {
			p.add("schemas."+string(k), "unknown kind of state (written by a newer release?)")
		}
	}
	if v, ok := s[schema.Manifest]; ok && v != format {
		p.add("schemas.manifest", "is %d but format is %d; they must be equal", v, format)
	}
}

func (j Journal) check(p *problemList) {
	if j.Events < 0 || j.Bytes < 0 {
		p.add("journal", "events (%d) and bytes (%d) must not be negative", j.Events, j.Bytes)
	}
	if err := j.Digest.Validate(); err != nil {
		p.add("journal.digest", "%q is not a sha256 digest", clip(string(j.Digest)))
	}
	if j.Bytes == 0 && (j.Events != 0 || (j.Digest != EmptyDigest && j.Digest.Validate() == nil)) {
		p.add("journal", "an empty journal (0 bytes) has 0 events and digest %s", EmptyDigest)
	}
	if j.Events > j.Bytes {
		p.add("journal.events", "%d events cannot fit in %d bytes", j.Events, j.Bytes)
	}
	if j.Bytes > 0 && j.Events == 0 {
		p.add("journal.events", "is 0 but the committed journal has %d bytes", j.Bytes)
	}
	var sum uint64
	for _, mach := range slices.Sorted(maps.Keys(j.Heads)) {
		h := j.Heads[mach]
		field := "journal.heads." + mach
		checkLabel(p, field, mach, false)
		if h.Seq < 1 {
			p.add(field+".seq", "is 0; sequence numbers start at 1")
		}
		if h.Clock < h.Seq {
			p.add(field+".clock", "is %d, less than seq %d; clocks grow by at least 1 per event", h.Clock, h.Seq)
		}
		if err := digest.Digest(h.ID).Validate(); err != nil {
			p.add(field+".id", "%q is not an event ID (sha256:<hex>)", clip(h.ID))
		}
		sum += h.Seq
	}
	if j.Events >= 0 && sum != uint64(j.Events) {
		p.add("journal.events", "is %d but the heads' sequence numbers add up to %d", j.Events, sum)
	}
}

func checkFiles(p *problemList, files []File) {
	seen := map[string]bool{}
	for i, f := range files {
		field := fmt.Sprintf("files[%d]", i)
		if err := ValidPath(f.Path); err != nil {
			p.add(field+".path", "%v", err)
		} else if !isLayoutFile(f.Path) {
			p.add(field+".path", "%q is not a file of the format-%d layout (FORMAT §1)", f.Path, FormatVersion)
		}
		if seen[f.Path] {
			p.add(field+".path", "%q is listed twice", clip(f.Path))
		}
		seen[f.Path] = true
		if i > 0 && files[i-1].Path >= f.Path && files[i-1].Path != f.Path {
			p.add(field+".path", "files must be sorted by path")
		}
		if f.Size < 0 {
			p.add(field+".size", "is negative")
		}
		if err := f.Digest.Validate(); err != nil {
			p.add(field+".digest", "%q is not a sha256 digest", clip(string(f.Digest)))
		}
	}
	for _, want := range LayoutFiles {
		if !seen[want] {
			p.add("files", "no entry for %s", want)
		}
	}
}

func isLayoutFile(path string) bool {
	for _, f := range LayoutFiles {
		if f == path {
			return true
		}
	}
	return false
}

func checkLabel(p *problemList, field, s string, mayBeEmpty bool) {
	switch {
	case s == "" && !mayBeEmpty:
		p.add(field, "is empty")
	case len(s) > maxLabel:
		p.add(field, "is %d bytes long, the limit is %d", len(s), maxLabel)
	case !printable(s):
		p.add(field, "holds invalid UTF-8 or a control character")
	}
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// ValidPath checks that p is a path inside a capsule or a workspace snapshot:
// relative, forward slashes, no empty, "." or ".." component, no NUL, valid
// UTF-8, at most 4096 bytes (FORMAT §1).
func ValidPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case len(p) > maxPathLen:
		return fmt.Errorf("path is %d bytes long, the limit is %d", len(p), maxPathLen)
	case !utf8.ValidString(p) || strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q holds invalid UTF-8 or NUL", clip(p))
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute", clip(p))
	}
	for rest := p; ; {
		c, tail, more := strings.Cut(rest, "/")
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("path %q has an empty, \".\" or \"..\" component", clip(p))
		}
		if !more {
			return nil
		}
		rest = tail
	}
}

// crockford is the ULID alphabet.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// IsULID reports whether s is a canonical ULID: 26 upper-case Crockford
// base32 characters whose first is at most '7' (the 128-bit limit).
func IsULID(s string) bool {
	if len(s) != 26 || s[0] > '7' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(crockford, s[i]) < 0 {
			return false
		}
	}
	return true
}

// IsTimestamp reports whether s is an RFC 3339 time in UTC:
// "YYYY-MM-DDTHH:MM:SS" with an optional fraction and a final "Z".
func IsTimestamp(s string) bool {
	body, ok := strings.CutSuffix(s, "Z")
	if !ok || len(body) < 19 {
		return false
	}
	if frac := body[19:]; frac != "" {
		if len(frac) < 2 || frac[0] != '.' || !allDigits(frac[1:]) || len(frac) > 10 {
			return false
		}
	}
	b := body[:19]
	if b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return false
	}
	for _, r := range [][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}} {
		if !allDigits(b[r[0]:r[1]]) {
			return false
		}
	}
	mon, day := atoi(b[5:7]), atoi(b[8:10])
	return mon >= 1 && mon <= 12 && day >= 1 && day <= 31 &&
		atoi(b[11:13]) <= 23 && atoi(b[14:16]) <= 59 && atoi(b[17:19]) <= 60
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
