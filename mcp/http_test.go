package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcapsule/capsule/envspec"
	"github.com/agentcapsule/capsule/mcp"
)

type echoIn struct {
	Text string `json:"text"`
}

// An http server is reached through the streamable client transport.
func TestHTTPServer(t *testing.T) {
	hs := httptest.NewServer(webServer())
	defer hs.Close()
	s, err := mcp.Start(t.Context(), mcp.Config{Servers: []envspec.Tool{{Name: "web", Transport: "http", URL: hs.URL,
		Effect: envspec.EffectRead, Approval: envspec.ApprovalNever}}, HTTPClient: hs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info, ok := s.Info("web.echo")
	if !ok || info.Effect != envspec.EffectRead || info.Approval != envspec.ApprovalNever {
		t.Fatalf("web.echo: %+v, %v", info, ok)
	}
	if got := s.Call(t.Context(), "web.echo", json.RawMessage(`{"text":"hi"}`)); got.IsError || got.Content != "web hi" {
		t.Fatalf("call: %+v", got)
	}
}

func webServer() http.Handler {
	srv := sdk.NewServer(&sdk.Implementation{Name: "web", Version: "v1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Return the text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "web " + in.Text}}}, nil, nil
		})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
}

// An http server that restarted (and forgot the session) fails the call
// in flight; the next call connects again.
func TestHTTPServerRestarted(t *testing.T) {
	var h atomic.Pointer[http.Handler]
	first := webServer()
	h.Store(&first)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	defer hs.Close()
	s, err := mcp.Start(t.Context(), mcp.Config{Servers: []envspec.Tool{{Name: "web", Transport: "http", URL: hs.URL,
		Effect: envspec.EffectRead, Approval: envspec.ApprovalNever}}, HTTPClient: hs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	second := webServer()
	h.Store(&second)
	got := s.Call(t.Context(), "web.echo", json.RawMessage(`{"text":"1"}`))
	if !got.IsError || !strings.Contains(got.Content, "the connection to the MCP server web broke during the call of web.echo") {
		t.Fatalf("the call the restart cut: %+v", got)
	}
	got = s.Call(t.Context(), "web.echo", json.RawMessage(`{"text":"2"}`))
	if got.IsError || got.Content != "web 2" {
		t.Fatalf("the call after the restart: %+v", got)
	}
}
