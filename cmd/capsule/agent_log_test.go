package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// A follower cut off for lagging reconnects from the count of events it
// printed and prints every event once: the node's first watch shows three
// events and lags, the second (asked from 3) shows the fourth.
func TestAgentLogFollowReconnectsAfterLag(t *testing.T) {
	w := journal.NewWriter("m1")
	var lines [][]byte
	for i := range 4 {
		e, err := w.Next(journal.KindUser, 1, "2026-01-01T00:00:00Z", journal.UserMessage{Text: strings.Repeat("x", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		w.Observe(&e)
		lines = append(lines, journal.Encode(e))
	}
	var mu sync.Mutex
	var froms []string
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		froms = append(froms, r.URL.Query().Get("from"))
		n := len(froms)
		mu.Unlock()
		enc := json.NewEncoder(rw)
		if n == 1 {
			_ = enc.Encode(api.WatchMessage{Event: lines[0]})
			_ = enc.Encode(api.WatchMessage{Event: lines[1]})
			_ = enc.Encode(api.WatchMessage{CaughtUp: true})
			_ = enc.Encode(api.WatchMessage{Event: lines[2]})
			_ = enc.Encode(api.WatchMessage{Lagged: true})
			return
		}
		_ = enc.Encode(api.WatchMessage{Event: lines[3]})
		_ = enc.Encode(api.WatchMessage{CaughtUp: true}) // then the stream ends: the node closed
	}))
	defer srv.Close()
	var out bytes.Buffer
	cl := api.NewLocalClientHTTP(srv.URL, srv.Client())
	if err := runAgentLog(context.Background(), cl, "01JAAAAAAAAAAAAAAAAAAAAAAA", &out, logFlags{json: true, follow: true}); err != nil {
		t.Fatal(err)
	}
	want := string(bytes.Join(lines, []byte("\n"))) + "\n"
	if out.String() != want {
		t.Errorf("followed\n%s\nwant\n%s", out.String(), want)
	}
	if strings.Join(froms, ",") != ",3" {
		t.Errorf("watches asked from %q, want the start then 3", froms)
	}
}
