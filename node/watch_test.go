package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/api"
)

// A watcher that does not read is cut off once its buffer is full: its
// channel holds the buffered messages, then one lagged message, then
// ends; the publisher never waits, and a watcher that reads keeps every
// message.
func TestHubCutsOffSlowWatcher(t *testing.T) {
	var h hub
	slow, fast := h.subscribe(), h.subscribe()
	total := watchBuffer + 100
	for i := range total {
		h.publish(func() watchItem {
			return watchItem{msg: api.WatchMessage{Delta: &api.WatchDelta{Step: "s", Text: strconv.Itoa(i)}}}
		})
		if it := <-fast.ch; it.msg.Delta == nil || it.msg.Delta.Text != strconv.Itoa(i) {
			t.Fatalf("fast watcher message %d = %+v", i, it.msg)
		}
	}
	if h.watchers() != 1 {
		t.Fatalf("watchers = %d after the slow one lagged, want 1", h.watchers())
	}
	var msgs []api.WatchMessage
	for it := range slow.ch {
		msgs = append(msgs, it.msg)
	}
	if len(msgs) != watchBuffer+1 || !msgs[watchBuffer].Lagged {
		t.Fatalf("slow watcher got %d messages (last lagged: %v), want %d then lagged", len(msgs), len(msgs) > 0 && msgs[len(msgs)-1].Lagged, watchBuffer)
	}
	for i, m := range msgs[:watchBuffer] {
		if m.Delta == nil || m.Delta.Text != strconv.Itoa(i) {
			t.Fatalf("slow watcher message %d = %+v, want delta %d", i, m, i)
		}
	}
	h.unsubscribe(fast)
	if _, open := <-fast.ch; open {
		t.Error("an unsubscribed watcher's channel is still open")
	}
	h.unsubscribe(slow) // already cut off: no double close
}

// A watch whose watcher stops reading gets, once it reads again, what
// its buffer held and then the lagged message, and the watch ends: the
// node does not wait for it.
func TestWatchLaggedEnds(t *testing.T) {
	n := newNode(t, t.TempDir(), nodeOpts{})
	st, err := n.CreateAgent(context.Background(), api.CreateAgentRequest{Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := n.getTenant(st.ID)
	release := make(chan struct{})
	var msgs []api.WatchMessage
	done := make(chan error)
	go func() {
		done <- n.WatchAgent(context.Background(), st.ID, api.WatchOptions{Live: true}, func(m api.WatchMessage) error {
			if len(msgs) == 0 {
				<-release // the first message (the state) waits: the watcher is slow
			}
			msgs = append(msgs, m)
			return nil
		})
	}()
	for a.watch.watchers() == 0 {
		runtime.Gosched()
	}
	for i := range 3 * watchBuffer {
		a.publishDelta("s", strconv.Itoa(i))
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(msgs) != watchBuffer+3 || msgs[0].State == nil || !msgs[1].CaughtUp || !msgs[len(msgs)-1].Lagged {
		t.Fatalf("watch sent %d messages (first %+v, last %+v), want the state, caught up, %d deltas, lagged", len(msgs), msgs[0], msgs[len(msgs)-1], watchBuffer)
	}
	if a.watch.watchers() != 0 {
		t.Errorf("watchers = %d after the watch ended", a.watch.watchers())
	}
}

// shortDir is a data folder whose socket path fits in a sockaddr_un.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "capw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// socketNode starts a node serving the local API on its data folder's
// socket, and returns a client of it.
func socketNode(t *testing.T) (*Node, *api.LocalClient) {
	t.Helper()
	dir := shortDir(t)
	n, err := New(Config{Dir: dir, Listen: "127.0.0.1:0", StepInterval: 5 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	return n, api.NewLocalClient(filepath.Join(dir, SocketFile))
}

// The watch stream over the real local socket: the agent's state, then
// its journal from the start, then live events, each event once and in
// the journal's order, with a user message said meanwhile among them.
func TestWatchOverSocket(t *testing.T) {
	n, c := socketNode(t)
	ctx := context.Background()
	st, err := c.CreateAgent(ctx, api.CreateAgentRequest{Name: "w"})
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, n, st.ID, 3)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := c.Watch(wctx, st.ID, api.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref, err := c.Say(ctx, st.ID, api.SayRequest{Text: "hi there"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	first, sawSay := true, false
	for m := range s.Messages() {
		if first {
			if m.State == nil || m.State.State != api.StateRunning {
				t.Fatalf("first message %+v, want state running", m)
			}
			first = false
			continue
		}
		if m.Event == nil {
			continue // the caught-up mark
		}
		e, err := m.JournalEvent()
		if err != nil {
			t.Fatalf("message %+v: %v", m, err)
		}
		ids = append(ids, e.ID)
		sawSay = sawSay || e.ID == ref.ID
		if sawSay && len(ids) > 20 {
			break
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	want := journalOf(t, n, st.ID)
	if len(want) < len(ids) {
		t.Fatalf("watched %d events, the journal has %d", len(ids), len(want))
	}
	for i, id := range ids {
		if want[i].ID != id {
			t.Fatalf("watched event %d is %s, the journal's is %s", i, id, want[i].ID)
		}
	}
	// From skips what the watcher has seen.
	s2, err := c.Watch(wctx, st.ID, api.WatchOptions{From: len(ids)})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for m := range s2.Messages() {
		if m.Event == nil {
			continue
		}
		e, _ := m.JournalEvent()
		if want := journalOf(t, n, st.ID); e.ID != want[len(ids)].ID {
			t.Errorf("watch from %d starts at %s, want %s", len(ids), e.ID, want[len(ids)].ID)
		}
		break
	}
}

// A watcher that goes away leaves nothing behind: its subscription and
// its goroutines end, on the node's side too, even when nothing happens
// that the node could fail to write to it (the agent is stopped).
func TestWatchNoLeakOnDisconnect(t *testing.T) {
	n, c := socketNode(t)
	ctx := context.Background()
	st, err := c.CreateAgent(ctx, api.CreateAgentRequest{Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := n.getTenant(st.ID)
	base := runtime.NumGoroutine()
	for range 5 {
		wctx, cancel := context.WithCancel(ctx)
		s, err := c.Watch(wctx, st.ID, api.WatchOptions{Live: true})
		if err != nil {
			t.Fatal(err)
		}
		for m := range s.Messages() {
			if m.CaughtUp {
				break // live now, then hang up
			}
		}
		if a.watch.watchers() == 0 {
			t.Fatal("a live watch has no subscription")
		}
		s.Close()
		cancel()
	}
	waitFor(t, "watchers to end", func() bool { return a.watch.watchers() == 0 })
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base+2 })
	// A watch of an unknown agent is refused before any stream starts.
	if _, err := c.Watch(ctx, "01N0SXCHAGENT0000000000000", api.WatchOptions{}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("watch of an unknown agent = %v, want ErrNotFound", err)
	}
}

// Closing the node ends its open watches (they would hold its servers'
// shutdown).
func TestWatchEndsOnClose(t *testing.T) {
	n, c := socketNode(t)
	st, err := c.CreateAgent(context.Background(), api.CreateAgentRequest{Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Watch(context.Background(), st.ID, api.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ended := make(chan int)
	go func() {
		k := 0
		for range s.Messages() {
			k++
		}
		ended <- k
	}()
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k := <-ended; k < 2 {
		t.Errorf("watch saw %d messages before the node closed, want the state and the journal", k)
	}
}

// waitFor polls cond until it holds, failing after a generous while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("waited 10s for %s", what)
}
