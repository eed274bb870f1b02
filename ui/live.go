package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// The live timeline: a server-sent event stream over the node's watch of
// the agent. Each journal event comes as an "item" whose data is the
// timeline item's HTML (rendered by the same template as the page) and
// whose id is the count of journal events seen, so a browser that
// reconnects (Last-Event-ID) goes on where it was. Text the model is
// generating comes as "delta", the agent's state changes as "state".
//
// The watch skips the journal's history (a watch from a position reads
// the whole file first: at 100k events, most of a second in which live
// events wait). Once it is subscribed (its caught-up mark), the events
// between the browser's position and the journal's end come from one
// paged read, and a live event that read already showed is dropped by its
// (machine, seq), as the node's own watch does.

// errLagged ends a stream whose watcher fell behind: the browser
// reconnects from its last event.
var errLagged = errors.New("ui: live: the watch lagged")

func (s *Server) live(w http.ResponseWriter, r *http.Request, x session) {
	id := r.PathValue("id")
	from, err := liveFrom(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	st := &sse{w: w}
	f := &follow{s: s, st: st, id: id, n: from, seen: map[string]uint64{}}
	err = s.cfg.Service.WatchAgent(r.Context(), id, api.WatchOptions{Live: true}, func(m api.WatchMessage) error {
		if m.CaughtUp {
			return f.catchUp(r)
		}
		return f.relay(m)
	})
	switch {
	case err == nil || errors.Is(err, errLagged) || errors.Is(err, errReload) || r.Context().Err() != nil:
	case !st.started:
		http.Error(w, err.Error(), statusOf(err))
	default:
		_ = st.send("failed", "", err.Error())
	}
}

// liveFrom is where a stream starts: the browser's Last-Event-ID when it
// reconnects, else the page's ?from.
func liveFrom(r *http.Request) (int, error) {
	s := r.Header.Get("Last-Event-ID")
	if s == "" {
		s = r.URL.Query().Get("from")
	}
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("ui: live: %q is not a count of events", s)
	}
	return n, nil
}

// errReload ends a stream whose browser is too far behind for one page:
// it is told to load the page again.
var errReload = errors.New("ui: live: too far behind")

// follow is one live stream: n counts the journal events the browser
// has, seen the highest seq per machine of those the catch-up read sent.
type follow struct {
	s    *Server
	st   *sse
	id   string
	n    int
	seen map[string]uint64
}

// catchUp sends the events from the browser's position to the journal's
// end, read with one paged read once the watch is subscribed.
func (f *follow) catchUp(r *http.Request) error {
	page, err := f.s.cfg.Service.Events(r.Context(), f.id, api.EventsQuery{Limit: api.MaxEventPage})
	if err != nil {
		return err
	}
	if page.Start > f.n {
		_ = f.st.send("reload", "", "")
		return errReload
	}
	for i, raw := range page.Events {
		e, err := journal.ParseLine(raw)
		if err != nil {
			return fmt.Errorf("ui: live: journal line %d: %w", page.Start+i+1, err)
		}
		f.seen[e.Machine] = max(f.seen[e.Machine], e.Seq)
		if page.Start+i >= f.n {
			if err := f.item(e); err != nil {
				return err
			}
		}
	}
	return f.st.send("state", "", "live")
}

// item sends e as the next timeline item.
func (f *follow) item(e journal.Event) error {
	html, err := f.s.pages.renderItem(itemOf(f.n, e))
	if err != nil {
		return err
	}
	f.n++
	return f.st.send("item", strconv.Itoa(f.n), html)
}

// relay sends one live watch message as a server-sent event.
func (f *follow) relay(m api.WatchMessage) error {
	switch {
	case m.Event != nil:
		e, err := m.JournalEvent()
		if err != nil {
			return err
		}
		if e.Seq <= f.seen[e.Machine] {
			return nil // the catch-up read sent it
		}
		return f.item(e)
	case m.Delta != nil:
		b, _ := json.Marshal(m.Delta)
		return f.st.send("delta", "", string(b))
	case m.State != nil:
		return f.st.send("state", "", strings.TrimSpace(m.State.State+" "+m.State.Reason))
	case m.Lagged:
		return errLagged
	}
	return nil
}

// sse writes server-sent events and flushes each.
type sse struct {
	w       http.ResponseWriter
	started bool
}

func (s *sse) send(event, id, data string) error {
	if !s.started {
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
		if _, err := io.WriteString(s.w, "retry: 1000\n\n"); err != nil {
			return err
		}
		s.started = true
	}
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	// A CR would end a line of the stream as a newline does.
	for _, line := range strings.Split(strings.ReplaceAll(data, "\r", ""), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	if _, err := io.WriteString(s.w, b.String()); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}
