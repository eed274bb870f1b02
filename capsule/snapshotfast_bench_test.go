package capsule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/agentcapsule/capsule/digest"
)

// BenchmarkSnapshotJSON parses and writes the snapshot.json of a 1,024-file
// workspace (the move benchmark's) with the fast path and, in the same run,
// with encoding/json as ParseSnapshot and Marshal used it before (the
// comparator): both validate.
//
//	go test ./capsule -run '^$' -bench SnapshotJSON -benchmem
func BenchmarkSnapshotJSON(b *testing.B) {
	s := &Snapshot{Version: SnapshotVersion}
	for i := range 1024 {
		p := fmt.Sprintf("big/d%02d/f%05d.bin", i%64, i)
		s.Entries = append(s.Entries, Entry{Path: p, Type: TypeFile, Size: 1 << 20, Blob: digest.FromBytes([]byte(p))})
	}
	s.Entries = append(s.Entries, Entry{Path: "run.sh", Type: TypeFile, Exec: true, Size: 10, Blob: digest.FromBytes([]byte("x"))})
	data, err := s.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	if s, err = ParseSnapshot(data); err != nil { // sorted, as Marshal writes it
		b.Fatal(err)
	}
	b.Logf("%d entries, %d bytes", len(s.Entries), len(data))
	b.Run("parse/fast", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseSnapshot(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse/encoding-json", func(b *testing.B) {
		for b.Loop() {
			s, err := slowDecode(data)
			if err == nil {
				err = s.Validate()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal/fast", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Marshal(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal/encoding-json", func(b *testing.B) {
		for b.Loop() {
			c := *s
			c.Entries = append([]Entry{}, s.Entries...)
			sort.Slice(c.Entries, func(i, j int) bool { return c.Entries[i].Path < c.Entries[j].Path })
			if err := c.Validate(); err != nil {
				b.Fatal(err)
			}
			var buf bytes.Buffer
			fmt.Fprintf(&buf, "{\"version\": %d, \"entries\": [", c.Version)
			for i, e := range c.Entries {
				line, err := json.Marshal(e)
				if err != nil {
					b.Fatal(err)
				}
				if i > 0 {
					buf.WriteByte(',')
				}
				buf.WriteString("\n  ")
				buf.Write(line)
			}
			buf.WriteString("\n]}\n")
			if buf.Len() != len(data) {
				b.Fatalf("comparator wrote %d bytes, Marshal %d", buf.Len(), len(data))
			}
		}
	})
}
