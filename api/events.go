package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// A paged read of an agent's journal (the web view's timeline, issue 17):
// one page of whole lines in file order, so that a journal of 100k events
// is read a page at a time, newest page first, never all at once.

// MaxEventPage bounds the events of one page.
const MaxEventPage = 1000

// EventsQuery says which page of the journal to read: the Limit events
// before position Before (file order, counting from 0). Before 0 means
// the end of the journal: the newest page.
type EventsQuery struct {
	Before int
	Limit  int
}

// EventPage is one page of an agent's journal.
type EventPage struct {
	// Total is how many whole lines the journal held when it was read.
	Total int `json:"total"`
	// Start is the position (file order) of Events[0].
	Start int `json:"start"`
	// Events are the journal lines of the page, exactly as stored.
	Events []json.RawMessage `json:"events"`
}

// EventReader is the part of the local API that reads a page of an
// agent's journal; a LocalService that implements it serves its route.
type EventReader interface {
	// Events returns the page q names of the journal of agent id.
	Events(ctx context.Context, id string, q EventsQuery) (EventPage, error)
}

var _ EventReader = (*LocalClient)(nil)

// CheckEventsQuery refuses a negative position or a limit outside
// 1..MaxEventPage.
func CheckEventsQuery(q EventsQuery) error {
	if q.Before < 0 {
		return fmt.Errorf("%w: events: before=%d is negative", ErrInvalid, q.Before)
	}
	if q.Limit < 1 || q.Limit > MaxEventPage {
		return fmt.Errorf("%w: events: limit=%d: want 1 to %d", ErrInvalid, q.Limit, MaxEventPage)
	}
	return nil
}

func eventsQuery(q EventsQuery) string {
	v := url.Values{}
	v.Set("limit", strconv.Itoa(q.Limit))
	if q.Before > 0 {
		v.Set("before", strconv.Itoa(q.Before))
	}
	return "?" + v.Encode()
}

func parseEventsQuery(v url.Values) (EventsQuery, error) {
	q := EventsQuery{Limit: 100}
	for name, into := range map[string]*int{"before": &q.Before, "limit": &q.Limit} {
		if s := v.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return q, fmt.Errorf("%w: events: %s=%q is not a number", ErrInvalid, name, s)
			}
			*into = n
		}
	}
	return q, CheckEventsQuery(q)
}

// eventsRoutes adds the paged journal read to mux when svc implements
// EventReader.
func eventsRoutes(mux *http.ServeMux, svc LocalService) {
	er, ok := svc.(EventReader)
	if !ok {
		return
	}
	mux.HandleFunc("GET "+PathAgents+"/{id}/events", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		q, err := parseEventsQuery(r.URL.Query())
		var page EventPage
		if err == nil {
			page, err = er.Events(r.Context(), id, q)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		// The lines go out as stored: HTML escaping would rewrite a "<" in
		// a message as \u003c, which is no longer the journal's canonical line.
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(page)
	}))
}

// Events implements EventReader.
func (c *LocalClient) Events(ctx context.Context, id string, q EventsQuery) (EventPage, error) {
	var v EventPage
	return v, c.do(ctx, http.MethodGet, agentPath(id, "/events")+eventsQuery(q), nil, &v)
}
