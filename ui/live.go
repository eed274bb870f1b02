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
)

// The live timeline: a server-sent event stream over the node's watch of
// the agent. Each journal event comes as an "item" whose data is the
// timeline item's HTML (rendered by the same template as the page) and
// whose id is the count of journal events seen, so a browser that
// reconnects (Last-Event-ID) goes on where it was. Text the model is
// generating comes as "delta", the agent's state changes as "state".

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
	n := from
	err = s.cfg.Service.WatchAgent(r.Context(), id, api.WatchOptions{From: from}, func(m api.WatchMessage) error {
		return s.relay(st, m, &n)
	})
	switch {
	case err == nil || errors.Is(err, errLagged) || r.Context().Err() != nil:
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

// relay sends one watch message as a server-sent event; n counts the
// journal events seen.
func (s *Server) relay(st *sse, m api.WatchMessage, n *int) error {
	switch {
	case m.Event != nil:
		e, err := m.JournalEvent()
		if err != nil {
			return err
		}
		html, err := s.pages.renderItem(itemOf(*n, e))
		if err != nil {
			return err
		}
		*n++
		return st.send("item", strconv.Itoa(*n), html)
	case m.Delta != nil:
		b, _ := json.Marshal(m.Delta)
		return st.send("delta", "", string(b))
	case m.State != nil:
		return st.send("state", "", strings.TrimSpace(m.State.State+" "+m.State.Reason))
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
