package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/vfs"
)

// errPageDone stops a watch once it has sent the journal's history.
var errPageDone = errors.New("page done")

// BenchmarkNewestPage reads the newest 100 events of a journal of
// $CAPSULE_BENCH_EVENTS events (default 20000; the figure is at
// 100000, whose setup of says takes about ten minutes), the web view's first
// timeline page: "events" with the paged read (Node.Events), "watch" with
// the way a client could before it, a watch from total-100 that stops at
// the caught-up mark. It reports the page's events and the journal's.
func BenchmarkNewestPage(b *testing.B) {
	total := 20000
	if s := os.Getenv("CAPSULE_BENCH_EVENTS"); s != "" {
		total, _ = strconv.Atoi(s)
	}
	n := newNode(b, "/data", nodeOpts{fsys: vfs.NewMem()})
	id := createAgent(b, n, "")
	ctx := context.Background()
	if _, err := n.StopAgent(ctx, id); err != nil {
		b.Fatal(err)
	}
	for i := range total - 1 {
		if _, err := n.Say(ctx, id, api.SayRequest{Text: fmt.Sprintf("message %d of a long journal, long enough to look like one", i)}); err != nil {
			b.Fatal(err)
		}
	}
	st, err := n.Agent(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("events", func(b *testing.B) {
		for b.Loop() {
			page, err := n.Events(ctx, id, api.EventsQuery{Limit: 100})
			if err != nil || len(page.Events) != 100 {
				b.Fatalf("%d events, %v", len(page.Events), err)
			}
		}
		b.ReportMetric(float64(st.Events), "journal-events")
	})
	b.Run("watch", func(b *testing.B) {
		for b.Loop() {
			got := 0
			err := n.WatchAgent(ctx, id, api.WatchOptions{From: st.Events - 100}, func(m api.WatchMessage) error {
				if m.CaughtUp {
					return errPageDone
				}
				if m.Event != nil {
					got++
				}
				return nil
			})
			if !errors.Is(err, errPageDone) || got != 100 {
				b.Fatalf("%d events, %v", got, err)
			}
		}
		b.ReportMetric(float64(st.Events), "journal-events")
	})
}
