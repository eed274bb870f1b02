package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
)

var _ api.EventReader = (*Node)(nil)

// Events implements api.EventReader: one page of the journal's whole
// lines, as far as the file reaches when the read starts (a torn or
// unfinished last line is not counted). It finds the page by the
// offsets of the line ends, so it reads the file once and parses only
// the lines of the page.
func (n *Node) Events(ctx context.Context, id string, q api.EventsQuery) (api.EventPage, error) {
	if err := api.CheckEventsQuery(q); err != nil {
		return api.EventPage{}, err
	}
	a, err := n.getTenant(id)
	if err != nil {
		return api.EventPage{}, err
	}
	a.mu.Lock()
	listed := a.listed()
	a.mu.Unlock()
	if !listed {
		return api.EventPage{}, fmt.Errorf("%w: agent %s: this node neither holds it nor keeps a copy", api.ErrNotFound, id)
	}
	f, err := n.fsys.Open(filepath.Join(a.capsule(), filepath.FromSlash(manifest.JournalPath)))
	if err != nil {
		return api.EventPage{}, fmt.Errorf("events %s: %w", id, err)
	}
	defer f.Close()
	ends, err := lineEnds(f)
	if err != nil {
		return api.EventPage{}, fmt.Errorf("events %s: %w", id, err)
	}
	return readPage(f, ends, q)
}

// lineEnds returns the offset just past each newline of r.
func lineEnds(r io.Reader) ([]int64, error) {
	var ends []int64
	buf := make([]byte, 1<<20)
	var off int64
	for {
		k, err := r.Read(buf)
		for i := 0; i < k; {
			j := bytes.IndexByte(buf[i:k], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			ends = append(ends, off+int64(i))
		}
		off += int64(k)
		if err == io.EOF {
			return ends, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readPage reads the lines of the page q names, given the line ends.
func readPage(r io.ReaderAt, ends []int64, q api.EventsQuery) (api.EventPage, error) {
	total := len(ends)
	before := total
	if q.Before > 0 && q.Before < total {
		before = q.Before
	}
	start := max(0, before-q.Limit)
	page := api.EventPage{Total: total, Start: start, Events: []json.RawMessage{}}
	if start == before {
		return page, nil
	}
	var from int64
	if start > 0 {
		from = ends[start-1]
	}
	buf := make([]byte, ends[before-1]-from)
	if _, err := r.ReadAt(buf, from); err != nil {
		return page, fmt.Errorf("events: read journal: %w", err)
	}
	for i, line := range bytes.SplitAfter(buf, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		line = line[:len(line)-1]
		if _, err := journal.ParseLine(line); err != nil {
			return page, fmt.Errorf("events: journal line %d: %w", start+i+1, err)
		}
		page.Events = append(page.Events, json.RawMessage(line))
	}
	return page, nil
}
