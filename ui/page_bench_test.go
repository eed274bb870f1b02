package ui

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentcapsule/capsule/journal"
)

// BenchmarkAgentPage renders the agent page (its newest timeline page of
// 100 events) of an agent whose journal holds 100k events, over the
// in-memory twin of the local API: the web view's own share of a first
// load (the node's paged read is BenchmarkNewestPage in package node).
func BenchmarkAgentPage(b *testing.B) {
	f := newFakeService()
	for i := range 100000 {
		if i%4 == 0 {
			f.add(journal.KindUser, journal.UserMessage{Text: fmt.Sprintf("message %d", i)})
		} else {
			f.add(journal.KindAssistant, journal.AssistantMessage{Text: fmt.Sprintf("answer %d", i), Producer: claude})
		}
	}
	s, err := New(Config{Service: f, Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login?token="+testToken, nil))
	cookie := rec.Result().Cookies()[0]
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/agents/"+fakeAgent, nil)
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("agent page: %d", rec.Code)
		}
	}
}
