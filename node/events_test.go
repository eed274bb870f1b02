package node

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// Events pages the journal newest first: each page holds the Limit
// events before its Before, exactly as the journal holds them, and the
// pages together are the whole journal once, in file order.
func TestEventsPagesTheJournal(t *testing.T) {
	n := newNode(t, t.TempDir(), nodeOpts{})
	id := createAgent(t, n, "")
	ctx := context.Background()
	if _, err := n.StopAgent(ctx, id); err != nil { // a stopped agent's journal grows only by what the test says
		t.Fatal(err)
	}
	for i := range 23 {
		if _, err := n.Say(ctx, id, api.SayRequest{Text: fmt.Sprintf("message %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	want := journalOf(t, n, id)
	var got []journal.Event
	before := 0
	for range len(want) {
		page, err := n.Events(ctx, id, api.EventsQuery{Before: before, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != len(want) {
			t.Fatalf("page total %d, want %d", page.Total, len(want))
		}
		var evs []journal.Event
		for _, raw := range page.Events {
			e, err := journal.ParseLine(raw)
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, e)
		}
		if before > 0 && page.Start+len(evs) != before {
			t.Fatalf("page from %d holds %d events, want them to end at %d", page.Start, len(evs), before)
		}
		got = append(evs, got...)
		if page.Start == 0 {
			break
		}
		before = page.Start
	}
	if len(got) != len(want) {
		t.Fatalf("pages hold %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID {
			t.Fatalf("event %d: %s, want %s", i, got[i].ID, want[i].ID)
		}
	}
}

// Events refuses a bad query and an agent the node does not know.
func TestEventsRefuses(t *testing.T) {
	n := newNode(t, t.TempDir(), nodeOpts{})
	id := createAgent(t, n, "")
	ctx := context.Background()
	for _, q := range []api.EventsQuery{{Limit: 0}, {Limit: api.MaxEventPage + 1}, {Before: -1, Limit: 5}} {
		if _, err := n.Events(ctx, id, q); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("Events(%+v): %v, want ErrInvalid", q, err)
		}
	}
	if _, err := n.Events(ctx, "01J00000000000000000000000", api.EventsQuery{Limit: 5}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Events of an unknown agent: %v, want ErrNotFound", err)
	}
}
