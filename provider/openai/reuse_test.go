package openai_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider/openai"
	"github.com/agentcapsule/capsule/provider/sim"
	"github.com/agentcapsule/capsule/render"
)

// Streamed calls in a row reuse one connection: the client reads each
// answer to its end before it closes the body, so the transport keeps the
// connection (a body closed early makes it dial again, and against a real
// endpoint pay a TCP and TLS handshake per call).
func TestStreamedCallsReuseTheConnection(t *testing.T) {
	for _, api := range []render.API{render.OpenAIChat, render.OpenAIResponses} {
		t.Run(string(api), func(t *testing.T) {
			var conns atomic.Int32
			hs := httptest.NewUnstartedServer(sim.New(sim.Config{}))
			hs.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			hs.Start()
			t.Cleanup(hs.Close)
			tg := target(api)
			client := &openai.Client{API: api, HTTP: &http.Client{Transport: &http.Transport{}}}
			for i := 1; i <= 4; i++ {
				c := newConvo(t, tg, "Please echo this.")
				c.add(journal.KindUser, journal.UserMessage{Text: fmt.Sprintf("turn %d", i)})
				c.step(client, tg, hs.URL+"/v1", fmt.Sprintf("step-%d", i))
			}
			if n := conns.Load(); n != 1 {
				t.Fatalf("4 streamed calls opened %d connections, want 1", n)
			}
		})
	}
}
