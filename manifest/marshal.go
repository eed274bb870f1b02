package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Marshal returns m as manifest.json: indented by two spaces, members in a
// fixed order, map keys sorted, files sorted by path, no HTML escaping, and a
// final newline, so equal manifests are equal bytes (FORMAT §2.1). It
// refuses a manifest that Parse would reject.
func (m *Manifest) Marshal() ([]byte, error) {
	c := m.Clone()
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	if len(c.Extensions) == 0 {
		c.Extensions = nil
	}
	for k, v := range c.Extensions {
		if !json.Valid(v) {
			return nil, fmt.Errorf("manifest: marshal: extension %q is not valid JSON", k)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("manifest: marshal: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil { // Encode ends with a newline
		return nil, fmt.Errorf("manifest: marshal: %w", err)
	}
	return buf.Bytes(), nil
}
