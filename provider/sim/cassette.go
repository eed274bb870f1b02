package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentcapsule/capsule/digest"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/schema"
)

// CassetteVersion is the version of the cassette format this release
// writes and reads (docs/SIMULATOR.md, "Cassettes").
const CassetteVersion = 1

// cassetteKind names the record type inside the file.
const cassetteKind = "capsule-sim-cassette"

// ErrCassette is returned for a cassette the simulator cannot use.
var ErrCassette = errors.New("sim: invalid cassette")

// Entry is one recorded answer: the digest of the request it answers
// (see docs/SIMULATOR.md for how it is computed), what the request was
// for, and the answer's bytes exactly as sent.
type Entry struct {
	Digest      string     `json:"digest"`
	API         render.API `json:"api"`
	Model       string     `json:"model"`
	Stream      bool       `json:"stream"`
	Status      int        `json:"status"`
	ContentType string     `json:"content_type"`
	Body        string     `json:"body"`
}

// Cassette is a set of recorded answers keyed by request digest. It is
// safe for concurrent use. The zero value is not usable; see NewCassette
// and ParseCassette.
type Cassette struct {
	mu      sync.Mutex
	entries []Entry
	index   map[string]int
}

// cassetteFile is the stored form.
type cassetteFile struct {
	V       int     `json:"v"`
	Release string  `json:"release"`
	Kind    string  `json:"kind"`
	Entries []Entry `json:"entries"`
}

// NewCassette returns an empty cassette, for recording.
func NewCassette() *Cassette { return &Cassette{index: map[string]int{}} }

// ParseCassette reads a stored cassette, refusing unknown fields, another
// version, a missing release and any malformed entry, each with the
// reason.
func ParseCassette(b []byte) (*Cassette, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f cassetteFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCassette, err)
	}
	switch {
	case f.Kind != cassetteKind:
		return nil, fmt.Errorf("%w: kind is %q, want %q", ErrCassette, f.Kind, cassetteKind)
	case f.V > CassetteVersion:
		return nil, fmt.Errorf("%w: version %d is newer than this release reads (%d); written by release %q", ErrCassette, f.V, CassetteVersion, f.Release)
	case f.V != CassetteVersion:
		return nil, fmt.Errorf("%w: version %d is unknown (this release reads %d)", ErrCassette, f.V, CassetteVersion)
	case f.Release == "":
		return nil, fmt.Errorf("%w: no release names its writer", ErrCassette)
	}
	c := NewCassette()
	for i, e := range f.Entries {
		if err := checkEntry(e); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrCassette, i, err)
		}
		if _, dup := c.index[e.Digest]; dup {
			return nil, fmt.Errorf("%w: entry %d: digest %s recorded twice", ErrCassette, i, e.Digest)
		}
		c.add(e)
	}
	return c, nil
}

func checkEntry(e Entry) error {
	if _, err := digest.Parse(e.Digest); err != nil {
		return fmt.Errorf("digest: %v", err)
	}
	known := false
	for _, a := range render.APIs {
		known = known || a == e.API
	}
	switch {
	case !known:
		return fmt.Errorf("unknown api %q", e.API)
	case e.Model == "":
		return errors.New("no model")
	case e.Status < 100 || e.Status > 599:
		return fmt.Errorf("status %d is not an HTTP status", e.Status)
	case e.ContentType == "":
		return errors.New("no content_type")
	}
	return nil
}

// LoadCassette reads and parses the cassette at path.
func LoadCassette(path string) (*Cassette, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sim: load cassette: %w", err)
	}
	c, err := ParseCassette(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Lookup returns the entry recorded for a request digest.
func (c *Cassette) Lookup(d string) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.index[d]
	if !ok {
		return Entry{}, false
	}
	return c.entries[i], true
}

// Add records an entry; a second entry for the same digest replaces the
// first (a deterministic model answers a request the same way twice).
func (c *Cassette) Add(e Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.add(e)
}

func (c *Cassette) add(e Entry) {
	if i, ok := c.index[e.Digest]; ok {
		c.entries[i] = e
		return
	}
	c.index[e.Digest] = len(c.entries)
	c.entries = append(c.entries, e)
}

// Len returns the number of entries.
func (c *Cassette) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Marshal returns the stored form, entries in recording order.
func (c *Cassette) Marshal() ([]byte, error) {
	c.mu.Lock()
	f := cassetteFile{V: CassetteVersion, Release: schema.Release, Kind: cassetteKind, Entries: append([]Entry{}, c.entries...)}
	c.mu.Unlock()
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sim: marshal cassette: %w", err)
	}
	return append(b, '\n'), nil
}

// WriteFile stores the cassette at path: a temporary file in the same
// directory, synced, then renamed over path.
func (c *Cassette) WriteFile(path string) error {
	b, err := c.Marshal()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cassette-*")
	if err != nil {
		return fmt.Errorf("sim: write cassette: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("sim: write cassette: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sim: write cassette: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("sim: write cassette: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("sim: write cassette: %w", err)
	}
	return nil
}
