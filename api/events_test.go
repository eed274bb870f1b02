package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/agentcapsule/capsule/journal"
)

// htmlLine is a journal line whose text holds the characters encoding/json
// escapes for HTML by default.
func htmlLine(t *testing.T) []byte {
	t.Helper()
	e, err := journal.NewWriter("m1").Next(journal.KindUser, 1, "", journal.UserMessage{Text: "a <b> & c"})
	if err != nil {
		t.Fatal(err)
	}
	return journal.Encode(e)
}

type eventsFake struct {
	talkFake
	page EventPage
	q    EventsQuery
}

func (f *eventsFake) Events(_ context.Context, id string, q EventsQuery) (EventPage, error) {
	f.q = q
	return f.page, CheckEventsQuery(q)
}

// A journal line holding "<", ">" and "&" reaches a client of the watch
// and of the paged read byte for byte, so it still parses as a canonical
// journal line (HTML escaping would rewrite it).
func TestJournalLinesTravelAsStored(t *testing.T) {
	line := htmlLine(t)
	f := &eventsFake{talkFake: talkFake{watch: []WatchMessage{{Event: line}}}, page: EventPage{Total: 1, Events: []json.RawMessage{line}}}
	srv := httptest.NewServer(NewLocalHandler(f))
	t.Cleanup(srv.Close)
	c := NewLocalClientHTTP(srv.URL, srv.Client())
	ctx := context.Background()
	var got []WatchMessage
	if err := c.WatchAgent(ctx, agentX, WatchOptions{}, func(m WatchMessage) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[0].Event) != string(line) {
		t.Fatalf("watch sent %+v, want %q", got, line)
	}
	if _, err := got[0].JournalEvent(); err != nil {
		t.Fatalf("the watched line does not parse: %v", err)
	}
	page, err := c.Events(ctx, agentX, EventsQuery{Before: 7, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if f.q != (EventsQuery{Before: 7, Limit: 3}) {
		t.Errorf("the node was asked for %+v, want before 7, limit 3", f.q)
	}
	if len(page.Events) != 1 || string(page.Events[0]) != string(line) {
		t.Fatalf("events sent %q, want %q", page.Events, line)
	}
	if _, err := c.Events(ctx, agentX, EventsQuery{Limit: MaxEventPage + 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a page above the limit: %v, want ErrInvalid", err)
	}
}

// FuzzEventsQuery: no query string panics the parser, and whatever it
// accepts is a page the node may read (CheckEventsQuery holds).
func FuzzEventsQuery(f *testing.F) {
	for _, s := range []string{"", "limit=100", "before=7&limit=3", "limit=0", "limit=1001", "before=-1&limit=5", "before=x", "limit=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := parseEventsQuery(v)
		if err == nil && CheckEventsQuery(q) != nil {
			t.Fatalf("%q parsed as %+v, which CheckEventsQuery refuses", raw, q)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("%q: %v, want ErrInvalid", raw, err)
		}
	})
}
