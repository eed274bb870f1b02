package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentcapsule/capsule/provider/sim"
)

func init() { addCommand(newModelCmd) }

func newModelCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "model",
		Short: "The embedded model endpoint (a simulator, not a language model)",
		Long: `Commands for the embedded model endpoint: a loopback HTTP server that speaks
the wire protocols of OpenAI, Anthropic, Gemini and Ollama and answers with
deterministic programs instead of a language model. See docs/SIMULATOR.md.`,
	}
	c.AddCommand(newModelServeCmd())
	return c
}

type modelServeFlags struct {
	listen, replay, record string
	json                   bool
}

func newModelServeCmd() *cobra.Command {
	var f modelServeFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the model simulator on a loopback address",
		Long: `Serve the embedded model endpoint on a loopback address until interrupted.

It is a SIMULATOR, not a language model: its models are small deterministic
programs, named so that nobody mistakes them for one.

  capsule-sim/planner  calls the tools the request offers (those the newest
                       user message names, in that order, else the first
                       four), one per step ("parallel" in the request: all
                       at once), with arguments valid under their JSON
                       Schemas (key=value in the request fills a property
                       of that name), then answers citing every result.
                       It reasons in each provider's style: signed
                       Anthropic thinking, Responses reasoning with
                       encrypted_content, Gemini thought signatures,
                       Ollama thinking.
  capsule-sim/echo     answers with the newest user message.
  capsule-sim/embed    an embedding model: deterministic hashed vectors of
                       the text's words (768 dimensions, L2-normalised).

One server speaks every protocol, whole and streamed, at the paths the
official SDKs use (give each SDK the base URL in parentheses):

  POST /v1/chat/completions                       OpenAI Chat (URL/v1)
  POST /v1/responses                              OpenAI Responses (URL/v1)
  POST /v1/messages                               Anthropic Messages (URL)
  POST /v1beta/models/M:generateContent           Gemini (URL)
  POST /v1beta/models/M:streamGenerateContent     Gemini, streamed
  POST /api/chat                                  Ollama (URL)
  POST /v1/embeddings                             OpenAI embeddings (URL/v1)
  POST /v1beta/models/M:embedContent              Gemini embeddings (URL)
  POST /v1beta/models/M:batchEmbedContents        Gemini, many texts
  POST /api/embed                                 Ollama embeddings (URL)
  GET  /capsule-sim/requests                      the request log, as JSON

Every request is checked against its provider's documented rules (a tool
call without a result, a reasoning signature it did not issue to that
model, a system role inside Anthropic messages, a whitespace-only text
block, arguments that are not a JSON object, ...); a violation is answered
with that provider's own status code and error body.

--replay answers from a cassette recorded earlier (keyed by request digest)
instead of running a model; --record saves every answer to a cassette when
the server stops. The first line printed is the address; each request
then prints one line (--json: one JSON object per line).`,
		Example: `  capsule model serve --listen 127.0.0.1:8099
  curl -s http://127.0.0.1:8099/v1/chat/completions \
    -d '{"model":"capsule-sim/echo","messages":[{"role":"user","content":"hello"}]}'
  curl -s http://127.0.0.1:8099/v1/messages -d '{"model":"capsule-sim/planner","max_tokens":64,
    "messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"hi"}]}'
      # 400 invalid_request_error: Unexpected role "system" ... (Anthropic's own answer)
  export OPENAI_BASE_URL=http://127.0.0.1:8099/v1 ANTHROPIC_BASE_URL=http://127.0.0.1:8099 \
    OLLAMA_HOST=http://127.0.0.1:8099    # the official SDKs, pointed at the simulator
  capsule model serve --listen 127.0.0.1:0 --json | head -1 | jq -r .url
  capsule model serve --listen 127.0.0.1:8099 --record fixtures/session.json
  capsule model serve --listen 127.0.0.1:8099 --replay fixtures/session.json
  curl -s http://127.0.0.1:8099/capsule-sim/requests | jq '.[] | {api, model, status}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runModelServe(cmd, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:0", "loopback address to listen on (port 0 picks a free port; the URL is printed)")
	fl.BoolVar(&f.json, "json", false, "print the address and then each request as one JSON object per line")
	fl.StringVar(&f.replay, "replay", "", "answer from this cassette instead of running a model")
	fl.StringVar(&f.record, "record", "", "save every answer to this cassette file when the server stops")
	return c
}

// serveLine is the first line model serve prints.
type serveLine struct {
	URL    string   `json:"url"`
	Listen string   `json:"listen"`
	Models []string `json:"models"`
	Replay string   `json:"replay,omitempty"`
	Record string   `json:"record,omitempty"`
	Note   string   `json:"note"`
}

func runModelServe(cmd *cobra.Command, f modelServeFlags) error {
	if f.replay != "" && f.record != "" {
		return usageError{errors.New("--replay and --record cannot be used together")}
	}
	cfg := sim.Config{}
	if f.replay != "" {
		c, err := sim.LoadCassette(f.replay)
		if err != nil {
			return err
		}
		cfg.Replay = c
	}
	if f.record != "" {
		cfg.Record = sim.NewCassette()
	}
	ln, err := sim.Listen(f.listen)
	if errors.Is(err, sim.ErrNotLoopback) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	out := &lockedWriter{w: cmd.OutOrStdout()}
	cfg.OnRequest = func(r sim.Request) { printRequest(out, r, f.json) }
	url := "http://" + ln.Addr().String()
	first := serveLine{URL: url, Listen: ln.Addr().String(), Models: sim.Models, Replay: f.replay, Record: f.record,
		Note: "capsule-sim is a simulator, not a language model"}
	if err := printServeLine(out, first, f.json); err != nil {
		ln.Close()
		return err
	}
	hs := &http.Server{Handler: sim.New(cfg), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("model serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if cfg.Record != nil {
		return cfg.Record.WriteFile(f.record)
	}
	return nil
}

func printServeLine(w io.Writer, l serveLine, asJSON bool) error {
	if asJSON {
		return printJSONLine(w, l)
	}
	_, err := fmt.Fprintf(w, "capsule-sim listening on %s (%s)\nmodels: %s\n", l.URL, l.Note, strings.Join(l.Models, ", "))
	return err
}

// printRequest prints one request of the log: its body is left out (GET
// /capsule-sim/requests has it).
func printRequest(w io.Writer, r sim.Request, asJSON bool) {
	if asJSON {
		r.Body = nil
		printJSONLine(w, r)
		return
	}
	line := fmt.Sprintf("#%d %s %s stream=%t %d", r.Seq, r.API, r.Model, r.Stream, r.Status)
	if r.Replayed {
		line += " replayed"
	}
	if len(r.Violations) > 0 {
		line += ": " + r.Violations[0].Message
	}
	fmt.Fprintln(w, line)
}

// printJSONLine prints v as one line of compact JSON.
func printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// lockedWriter serializes the lines of concurrent requests.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
