package openai_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/openai"
	"github.com/agentcapsule/capsule/render"
)

// Cancelling the context stops a call promptly, whether the server has
// not answered yet or is in the middle of a stream, and the error is the
// context's.
func TestCancel(t *testing.T) {
	for _, midStream := range []bool{false, true} {
		t.Run(map[bool]string{false: "before answer", true: "mid stream"}[midStream], func(t *testing.T) {
			entered := make(chan struct{})
			release := make(chan struct{})
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // so the server notices the client going away
				if midStream {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"wait\"}}]}\n\n")
					w.(http.Flusher).Flush()
				}
				close(entered)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			defer hs.Close()
			defer close(release) // before Close, which waits for the handler
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-entered; cancel() }()
			req := firstRequest(t, render.OpenAIChat, hs.URL+"/v1")
			_, err := (&openai.Client{API: render.OpenAIChat}).Call(ctx, req)
			if !errors.Is(err, context.Canceled) || errors.Is(err, provider.ErrUnavailable) {
				t.Fatalf("err = %v, want context.Canceled, not a provider failure", err)
			}
		})
	}
}

// keyServer answers 401 with an error body that echoes nothing, and
// records the Authorization header it got.
func keyServer(t *testing.T) (*httptest.Server, *string) {
	var auth string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
	}))
	t.Cleanup(hs.Close)
	return hs, &auth
}

// The key goes in the Authorization header and never into an error,
// neither the provider's refusal nor a connection error; an empty key
// sends no header, and OPENAI_API_KEY in the environment is not read.
func TestKeyNeverInError(t *testing.T) {
	const key = "sk-capsule-test-9f8e7d6c5b4a"
	hs, auth := keyServer(t)
	for _, api := range []render.API{render.OpenAIChat, render.OpenAIResponses} {
		req := firstRequest(t, api, hs.URL+"/v1")
		req.Key = key
		_, err := (&openai.Client{API: api}).Call(context.Background(), req)
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Status != 401 || !errors.Is(err, provider.ErrRefused) || pe.Message != "Incorrect API key provided." {
			t.Fatalf("%s: err = %v, want the provider's 401 refusal", api, err)
		}
		if *auth != "Bearer "+key {
			t.Errorf("%s: Authorization %q, want the key as a bearer token", api, *auth)
		}
		if strings.Contains(err.Error(), key) || strings.Contains(pe.Message, key) {
			t.Errorf("%s: error %q holds the key", api, err)
		}
	}

	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	req := firstRequest(t, render.OpenAIChat, hs.URL+"/v1")
	(&openai.Client{API: render.OpenAIChat}).Call(context.Background(), req)
	if *auth != "" {
		t.Errorf("no key: Authorization %q, want none", *auth)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	req = firstRequest(t, render.OpenAIChat, closed)
	req.Key, req.Retry = key, provider.Retry{Attempts: 1}
	_, err = (&openai.Client{API: render.OpenAIChat}).Call(context.Background(), req)
	if !errors.Is(err, provider.ErrUnavailable) || strings.Contains(err.Error(), key) {
		t.Errorf("connection error %v: want unavailable, without the key", err)
	}
}

// A server that echoes the key in its error message has it scrubbed.
func TestKeyScrubbedFromMessage(t *testing.T) {
	const key = "sk-echoed-1234567890"
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"error":"key `+key+` is not allowed"}`)
	}))
	defer hs.Close()
	req := firstRequest(t, render.OpenAIChat, hs.URL+"/v1")
	req.Key = key
	_, err := (&openai.Client{API: render.OpenAIChat}).Call(context.Background(), req)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 403 || pe.Message != "key [key] is not allowed" {
		t.Fatalf("err = %v, want 403 with the key scrubbed from the message", err)
	}
}

// New takes the two OpenAI APIs only, and a client refuses a request
// for another API.
func TestNew(t *testing.T) {
	for _, api := range render.APIs {
		c, err := openai.New(api, nil)
		ok := api == render.OpenAIChat || api == render.OpenAIResponses
		if (err == nil) != ok || ok && c.API != api {
			t.Errorf("New(%s) = %v, %v", api, c, err)
		}
	}
	c, _ := openai.New(render.OpenAIChat, nil)
	_, err := c.Call(context.Background(), &provider.Request{API: render.OpenAIResponses, Body: []byte("{}")})
	if !errors.Is(err, openai.ErrAPI) {
		t.Errorf("Call for another API: %v, want ErrAPI", err)
	}
}
