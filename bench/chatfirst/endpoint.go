package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"time"
)

// captured is a model request as the simulator logged it.
type captured struct {
	API  string          `json:"api"`
	Path string          `json:"path"`
	Body json.RawMessage `json:"body"`
}

// runCapture writes the newest Chat Completions request the simulator
// received (the body the agent sent) to -out.
func runCapture(args []string) error {
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	sim := fs.String("sim", "", "the simulator's URL")
	out := fs.String("out", "", "file to write the request to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	res, err := http.Get(strings.TrimRight(*sim, "/") + "/capsule-sim/requests")
	if err != nil {
		return fmt.Errorf("request log: %w", err)
	}
	defer res.Body.Close()
	var reqs []captured
	if err := json.NewDecoder(res.Body).Decode(&reqs); err != nil {
		return fmt.Errorf("request log: %w", err)
	}
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].API == "openai-chat" {
			b, err := json.Marshal(reqs[i])
			if err != nil {
				return err
			}
			return os.WriteFile(*out, b, 0o644)
		}
	}
	return fmt.Errorf("no Chat Completions request in the log of %s", *sim)
}

// runEndpoint sends the captured request through -url and prints the
// time from the request's write to the first response byte and to the
// first chunk with content, in nanoseconds.
func runEndpoint(args []string) error {
	fs := flag.NewFlagSet("endpoint", flag.ContinueOnError)
	base := fs.String("url", "", "the proxy's URL")
	reqFile := fs.String("req", "", "a request written by capture")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := os.ReadFile(*reqFile)
	if err != nil {
		return err
	}
	var c captured
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%s: %w", *reqFile, err)
	}
	var wrote, first time.Time
	trace := &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { wrote = time.Now() },
		GotFirstResponseByte: func() { first = time.Now() },
	}
	ctx := httptrace.WithClientTrace(context.Background(), trace)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(*base, "/")+c.Path, bytes.NewReader(c.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer chatfirst")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("endpoint answered %s", res.Status)
	}
	content, err := firstContent(bufio.NewReader(res.Body))
	if err != nil {
		return err
	}
	fmt.Printf("%d %d\n", first.Sub(wrote).Nanoseconds(), content.Sub(wrote).Nanoseconds())
	return nil
}

// firstContent reads an SSE stream to the first chunk carrying text and
// returns when it arrived; the rest is drained.
func firstContent(r *bufio.Reader) (time.Time, error) {
	var at time.Time
	for {
		line, err := r.ReadString('\n')
		if at.IsZero() && strings.HasPrefix(line, "data: {") {
			var ch struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if json.Unmarshal([]byte(line[len("data: "):]), &ch) == nil && len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
				at = time.Now()
			}
		}
		if err != nil {
			if at.IsZero() {
				return at, fmt.Errorf("stream ended with no content: %v", err)
			}
			return at, nil
		}
	}
}
