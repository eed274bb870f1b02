package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/journal"
)

// talkFake serves the talk calls; the rest of LocalService is not used.
type talkFake struct {
	LocalService
	said  []string
	model ModelRequest
	// watch is what WatchAgent sends before it returns fail.
	watch []WatchMessage
	fail  error
	opts  WatchOptions
}

func (f *talkFake) Say(_ context.Context, id string, req SayRequest) (EventRef, error) {
	f.said = append(f.said, req.Text)
	return EventRef{ID: "sha256:" + strings.Repeat("a", 64), Machine: "m1", Seq: uint64(len(f.said)), Kind: journal.KindUser}, nil
}

func (f *talkFake) SetModel(_ context.Context, id string, req ModelRequest) (EventRef, error) {
	f.model = req
	return EventRef{Kind: journal.KindModelChange}, nil
}

func (f *talkFake) WatchAgent(_ context.Context, id string, opts WatchOptions, send func(WatchMessage) error) error {
	f.opts = opts
	for _, m := range f.watch {
		if err := send(m); err != nil {
			return err
		}
	}
	return f.fail
}

const agentX = "01JAAAAAAAAAAAAAAAAAAAAAAA"

func talkServer(t *testing.T, f *talkFake) *LocalClient {
	t.Helper()
	srv := httptest.NewServer(NewLocalHandler(f))
	t.Cleanup(srv.Close)
	return NewLocalClientHTTP(srv.URL, srv.Client())
}

// Say and SetModel round trip, a message of the largest size included
// (its JSON, escaped, is far above the 1 MiB of other requests).
func TestSayAndModelRoundTrip(t *testing.T) {
	f := &talkFake{}
	c := talkServer(t, f)
	big := strings.Repeat("\x01", MaxSayText) // escaped as \u0001: 6 MiB of JSON
	for _, text := range []string{"hello", big} {
		ref, err := c.Say(context.Background(), agentX, SayRequest{Text: text})
		if err != nil || ref.Kind != journal.KindUser {
			t.Fatalf("Say(%d bytes) = %+v, %v", len(text), ref, err)
		}
	}
	if len(f.said) != 2 || f.said[1] != big {
		t.Errorf("the node was told %d messages (the big one intact: %v)", len(f.said), len(f.said) == 2 && f.said[1] == big)
	}
	req := ModelRequest{Provider: "local", API: "chat", Model: "m", BaseURL: "http://127.0.0.1:1/v1"}
	if _, err := c.SetModel(context.Background(), agentX, req); err != nil || f.model != req {
		t.Errorf("SetModel: node got %+v (%v), want %+v", f.model, err, req)
	}
	if _, err := c.Say(context.Background(), "../x", SayRequest{Text: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Say to a malformed agent ID = %v, want ErrInvalid", err)
	}
}

// A watch carries its options, yields its messages in order, and ends
// with the node's error: as the HTTP status before the stream started,
// as a final error line after.
func TestWatchRoundTrip(t *testing.T) {
	ev := journal.Encode(mustEvent(t))
	f := &talkFake{watch: []WatchMessage{{State: &WatchState{State: StateRunning}}, {Event: ev}, {CaughtUp: true}, {Delta: &WatchDelta{Step: "s1", Text: "hi"}}},
		fail: fmt.Errorf("%w: node closing", ErrUnavailable)}
	c := talkServer(t, f)
	s, err := c.Watch(context.Background(), agentX, WatchOptions{From: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []WatchMessage
	for m := range s.Messages() {
		got = append(got, m)
	}
	if len(got) != 4 || got[0].State == nil || string(got[1].Event) != string(ev) || !got[2].CaughtUp || got[3].Delta.Text != "hi" {
		t.Errorf("watch yielded %+v", got)
	}
	if e, err := got[1].JournalEvent(); err != nil || journal.Encode(e) == nil {
		t.Errorf("the event does not parse: %v", err)
	}
	if f.opts != (WatchOptions{From: 7}) {
		t.Errorf("node got options %+v, want From 7", f.opts)
	}
	if err := s.Err(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Err = %v, want ErrUnavailable", err)
	}
	f.watch, f.fail = nil, fmt.Errorf("%w: agent %s", ErrNotFound, agentX)
	if _, err := c.Watch(context.Background(), agentX, WatchOptions{Live: true}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Watch of an unknown agent = %v, want ErrNotFound", err)
	}
	for _, q := range []string{"?from=-1", "?from=x", "?live=yes"} {
		resp, err := c.hc.Get(c.base + PathAgents + "/" + agentX + "/watch" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("watch%s: HTTP %d, want 400", q, resp.StatusCode)
		}
	}
}

func mustEvent(t *testing.T) journal.Event {
	t.Helper()
	e, err := journal.NewWriter("m1").Next(journal.KindUser, 1, "2026-01-01T00:00:00Z", journal.UserMessage{Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// CheckSayText refuses what no message may be.
func TestCheckSayText(t *testing.T) {
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{"hi", true}, {"a\x00b", true}, {strings.Repeat("x", MaxSayText), true},
		{"", false}, {" \n", false}, {strings.Repeat("x", MaxSayText+1), false}, {"\xc3", false},
	} {
		if err := CheckSayText(tc.text); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("CheckSayText(%.10q) = %v, want ok %v", tc.text, err, tc.ok)
		}
	}
}

// FuzzSayRequest feeds arbitrary bodies to a say request's decoding and
// check: what passes is one valid, non-empty UTF-8 text of at most
// MaxSayText bytes.
func FuzzSayRequest(f *testing.F) {
	f.Add([]byte(`{"text":"hello"}`))
	f.Add([]byte(`{"text":"\u0000\ud800"}`))
	f.Add([]byte(`{"text":" "}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req SayRequest
		if err := decodeJSON(bytes.NewReader(data), maxSayRequest, &req); err != nil {
			return
		}
		if err := CheckSayText(req.Text); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if !utf8.ValidString(req.Text) || len(req.Text) > MaxSayText || strings.TrimSpace(req.Text) == "" {
			t.Fatalf("accepted %q", req.Text)
		}
	})
}

// FuzzWatchStream feeds arbitrary bytes to a watch stream's reader and
// to the event parser of what it yields: neither may panic.
func FuzzWatchStream(f *testing.F) {
	f.Add([]byte("{\"state\":{\"state\":\"running\"}}\n{\"caught_up\":true}\n{\"lagged\":true}\n"))
	f.Add([]byte("{\"error\":{\"code\":\"not_found\",\"message\":\"x\"}}\n"))
	f.Add([]byte("{\"event\":{\"id\":\"x\"}}\nnot json\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &WatchStream{ctx: context.Background(), body: io.NopCloser(bytes.NewReader(data))}
		for m := range s.Messages() {
			if m.Event != nil {
				_, _ = m.JournalEvent()
			}
		}
		_ = s.Err()
	})
}
