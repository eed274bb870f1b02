package capsule

import (
	"bytes"
	"fmt"
	"io"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/schema"
	"github.com/agentcapsule/capsule/vfs"
)

// journalVersion is the journal's schema version a commit records in the
// manifest: the highest v among the committed lines (FORMAT §11.6), 1 for
// an empty journal, which every release reads. old is the version the
// manifest recorded before. A journal only grows between commits of one
// holder, and this release writes no version above journal.SchemaVersion,
// so once the record reaches it nothing is read; otherwise the committed
// lines are read from the end, stopping at the first line of that version.
func journalVersion(fsys vfs.FS, path string, size int64, events int64, old int) (int, error) {
	if events == 0 {
		return journal.FloorVersion, nil
	}
	if old >= journal.SchemaVersion {
		return old, nil
	}
	f, err := fsys.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return 0, fmt.Errorf("capsule: %s: no random access", path)
	}
	high := journal.FloorVersion
	err = eachLineBackward(ra, size, func(line []byte) bool {
		v, err := lineVersion(line)
		if err != nil {
			return true // a line of an unexpected shape names no version this release writes
		}
		high = max(high, v)
		return high < journal.SchemaVersion
	})
	return high, err
}

// lineVersion reads v of a canonical journal line: its last member, since
// members are sorted and none this release knows sorts after "v".
func lineVersion(line []byte) (int, error) {
	i := bytes.LastIndex(line, []byte(`,"v":`))
	if i < 0 || len(line) == 0 || line[len(line)-1] != '}' {
		e, err := journal.ParseLine(line)
		return e.V, err
	}
	n := 0
	for _, c := range line[i+5 : len(line)-1] {
		if c < '0' || c > '9' {
			e, err := journal.ParseLine(line)
			return e.V, err
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// eachLineBackward calls visit with every newline-terminated line of the
// first size bytes of r, last first, until visit returns false.
func eachLineBackward(r io.ReaderAt, size int64, visit func([]byte) bool) error {
	const chunk = 64 << 10
	var carry []byte // the start of the line read so far, which lies before
	end := size
	for end > 0 {
		start := max(0, end-chunk)
		buf := make([]byte, end-start, end-start+int64(len(carry)))
		if _, err := r.ReadAt(buf, start); err != nil && err != io.EOF {
			return err
		}
		buf = append(buf, carry...)
		if start+int64(len(buf)) == size { // drop the journal's final newline
			buf = bytes.TrimSuffix(buf, []byte{'\n'})
		}
		for {
			j := bytes.LastIndexByte(buf, '\n')
			if j < 0 {
				break
			}
			if !visit(buf[j+1:]) {
				return nil
			}
			buf = buf[:j]
		}
		if int64(len(buf)) > journal.MaxLine+1 {
			return fmt.Errorf("capsule: journal line over %d bytes", journal.MaxLine)
		}
		carry = append([]byte(nil), buf...)
		end = start
	}
	if len(carry) > 0 {
		visit(carry)
	}
	return nil
}

// setJournalVersion records the committed journal's version in the manifest.
func (tx *Tx) setJournalVersion(size, events int64) error {
	old := 1
	if v, ok := tx.m.Schemas[schema.Journal]; ok {
		old = v
	}
	v, err := journalVersion(tx.c.fsys, tx.c.path(manifest.JournalPath), size, events, old)
	if err != nil {
		return fmt.Errorf("set journal: version: %w", err)
	}
	tx.m.Schemas[schema.Journal] = v
	return nil
}

// CheckJournalView reports whether a release that reads journal versions
// up to to reads every line of the journal r as this release does: each
// line above to goes through the journal's down steps (FORMAT §11.7.3: the
// same bytes, and a line of a kind version to does not have is refused).
// It returns nil when it does, else an error naming the first event that
// cannot be handed down, wrapping schema.ErrNotExpressible.
func CheckJournalView(r io.Reader, to int) error {
	return journal.Each(r, func(e *journal.Event, pos journal.Pos) error {
		if e.V <= to {
			return nil
		}
		if _, err := schema.Down(schema.Journal, e.V, to, journal.Encode(*e)); err != nil {
			return fmt.Errorf("capsule: journal line %d: %w", pos.Line, err)
		}
		return nil
	})
}

// journalDown records the journal at version to for a rollback to a
// release that writes it (capsule migrate --to): the lines are never
// rewritten, so each one must read as it is under version to.
func (mg *migration) journalDown(tx *Tx, from, to int) (KindChange, error) {
	ch := KindChange{KindPlan: KindPlan{Kind: schema.Journal, From: from, To: to}, How: "steps"}
	steps, err := schema.DownSteps(schema.Journal, from, to)
	if err != nil {
		return ch, err
	}
	for _, s := range steps {
		ch.Steps = append(ch.Steps, s.Summary)
	}
	f, err := mg.c.fsys.Open(mg.c.path(manifest.JournalPath))
	if err != nil {
		return ch, err
	}
	defer f.Close()
	if err := CheckJournalView(io.LimitReader(f, tx.m.Journal.Bytes), to); err != nil {
		return ch, err
	}
	tx.m.Schemas[schema.Journal] = to
	return ch, nil
}
