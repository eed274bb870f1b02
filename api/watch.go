package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentcapsule/capsule/journal"
)

// Talking to an agent and watching it (issue 13): say and set model are
// JSON calls that journal one event and wake the runner; watch is a
// stream of NDJSON lines (WatchMessage), first the journal from a
// position, then what happens live, until the client goes away.

// MaxSayText bounds the text of one user message sent with Say, in bytes.
const MaxSayText = 1 << 20

// maxSayRequest bounds a say request body: JSON may escape every byte of
// the text as \u00XX.
const maxSayRequest = 6*MaxSayText + 4096

// CheckSayText checks the text of a user message: not empty (or only
// white space), at most MaxSayText bytes, valid UTF-8.
func CheckSayText(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return fmt.Errorf("%w: say: the text is empty", ErrInvalid)
	case len(text) > MaxSayText:
		return fmt.Errorf("%w: say: the text is %d bytes, more than the %d a message may hold", ErrInvalid, len(text), MaxSayText)
	case !utf8.ValidString(text):
		return fmt.Errorf("%w: say: the text is not valid UTF-8", ErrInvalid)
	}
	return nil
}

// ModelAPIs are the API spellings a ModelRequest may name: the journal's
// (model_change.api) and the wire formats' own names.
var ModelAPIs = []string{"chat", "responses", "messages", "generateContent",
	"openai-chat", "openai-responses", "anthropic", "gemini", "ollama"}

// KnownModelAPI reports whether s is one of ModelAPIs.
func KnownModelAPI(s string) bool { return slices.Contains(ModelAPIs, s) }

// DefaultAPI is the API a provider's model is served with when a
// ModelRequest names none: OpenAI Responses, Anthropic messages, Gemini
// generateContent, Ollama chat; empty for any other provider (an
// OpenAI-compatible server says "chat").
func DefaultAPI(provider string) string {
	switch provider {
	case "openai":
		return "responses"
	case "anthropic":
		return "messages"
	case "google", "gemini":
		return "generateContent"
	case "ollama":
		return "chat"
	}
	return ""
}

// SayRequest asks the node to journal a user message for the agent.
type SayRequest struct {
	Text string `json:"text"`
}

// ModelRequest asks the node to switch the agent to another model: the
// node journals a model_change (Provider, API, Model) and keeps BaseURL
// in its own record of the agent.
type ModelRequest struct {
	Provider string `json:"provider"`
	API      string `json:"api,omitempty"`
	Model    string `json:"model"`
	// BaseURL is where the node reaches the model's server: a fact of the
	// host, kept in the node's record of the agent, never in the capsule.
	BaseURL string `json:"base_url,omitempty"`
}

// EventRef names a journal event a call appended.
type EventRef struct {
	ID      string       `json:"id"`
	Machine string       `json:"machine"`
	Seq     uint64       `json:"seq"`
	Kind    journal.Kind `json:"kind"`
}

// RefOf returns the reference to e.
func RefOf(e journal.Event) EventRef {
	return EventRef{ID: e.ID, Machine: e.Machine, Seq: e.Seq, Kind: e.Kind}
}

// WatchOptions says where a watch starts.
type WatchOptions struct {
	// From skips the journal's first From events (in file order): a
	// watcher that was cut off reconnects from the count it had seen.
	From int
	// Live skips the journal's history: only what happens from now on.
	Live bool
}

// Agent states a watch reports in WatchState.State, besides the states of
// AgentStatus (running, stopped, frozen, blocked, retired).
const (
	WatchIdle  = "idle"  // running, waiting for input (a user message, a model)
	WatchMoved = "moved" // the agent now runs on another node
)

// WatchState is a change of the agent's state.
type WatchState struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// WatchDelta is text the model is generating, shown as it streams and
// journaled only once the generation completes (as an assistant event of
// the same step).
type WatchDelta struct {
	Step string `json:"step"`
	Text string `json:"text"`
}

// WatchMessage is one line of a watch stream; exactly one field is set.
type WatchMessage struct {
	// Event is one journal line, exactly as the journal stores it.
	Event json.RawMessage `json:"event,omitempty"`
	Delta *WatchDelta     `json:"delta,omitempty"`
	State *WatchState     `json:"state,omitempty"`
	// CaughtUp marks the end of the journal's history (sent once, also
	// when the watch skipped the history): what follows is live.
	CaughtUp bool `json:"caught_up,omitempty"`
	// Lagged is the last message to a watcher that fell behind the live
	// stream: it missed messages, and reconnects from the journal
	// (WatchOptions.From) to see the events again. Deltas are not replayed.
	Lagged bool `json:"lagged,omitempty"`
	// Error ends a stream the node could not go on with.
	Error *Error `json:"error,omitempty"`
}

// JournalEvent parses m.Event.
func (m WatchMessage) JournalEvent() (journal.Event, error) {
	if m.Event == nil {
		return journal.Event{}, errors.New("api: watch message carries no event")
	}
	return journal.ParseLine(m.Event)
}

// watchQuery encodes opts as the query of a watch request.
func watchQuery(opts WatchOptions) string {
	q := url.Values{}
	if opts.From > 0 {
		q.Set("from", strconv.Itoa(opts.From))
	}
	if opts.Live {
		q.Set("live", "1")
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// parseWatchQuery reads the options of a watch request.
func parseWatchQuery(q url.Values) (WatchOptions, error) {
	var o WatchOptions
	if s := q.Get("from"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return o, fmt.Errorf("%w: from=%q is not a count of events", ErrInvalid, s)
		}
		o.From = n
	}
	switch q.Get("live") {
	case "", "0":
	case "1":
		o.Live = true
	default:
		return o, fmt.Errorf("%w: live=%q: want 1 or 0", ErrInvalid, q.Get("live"))
	}
	return o, nil
}

// serveWatch answers a watch with NDJSON until the client goes away or
// the node ends the stream.
func serveWatch(w http.ResponseWriter, r *http.Request, svc LocalService, id string) {
	opts, err := parseWatchQuery(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	started := false
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // journal lines go out as stored: "<" escaped is not canonical
	send := func(m WatchMessage) error {
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		if err := enc.Encode(m); err != nil {
			return err
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return nil
	}
	err = svc.WatchAgent(r.Context(), id, opts, send)
	switch {
	case err == nil || r.Context().Err() != nil:
	case !started:
		writeError(w, err)
	default:
		_ = send(WatchMessage{Error: toError(err)})
	}
}

// WatchStream is an open watch: range over Messages, then check Err.
type WatchStream struct {
	ctx  context.Context
	body io.ReadCloser
	err  error
}

// Messages yields the stream's messages until it ends, the context of
// the watch is done, or the stream is closed. A message carrying an Error
// ends the stream and is reported by Err, not yielded.
func (s *WatchStream) Messages() iter.Seq[WatchMessage] {
	return func(yield func(WatchMessage) bool) {
		sc := bufio.NewScanner(s.body)
		sc.Buffer(make([]byte, 64<<10), journal.MaxLine+64<<10)
		for sc.Scan() {
			var m WatchMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				s.err = fmt.Errorf("watch: bad line: %w", err)
				return
			}
			if m.Error != nil {
				m.Error.Status = statusOf(m.Error.Code)
				s.err = m.Error
				return
			}
			if !yield(m) {
				return
			}
		}
		if err := sc.Err(); err != nil && s.ctx.Err() == nil {
			s.err = fmt.Errorf("watch: %w", err)
		}
	}
}

// Err returns what ended the stream: nil when the node ended it or the
// stream was closed.
func (s *WatchStream) Err() error { return s.err }

// Close ends the watch.
func (s *WatchStream) Close() error { return s.body.Close() }

// Watch opens a watch of agent id. The stream lives until ctx is done or
// it is closed.
func (c *LocalClient) Watch(ctx context.Context, id string, opts WatchOptions) (*WatchStream, error) {
	resp, err := c.send(ctx, http.MethodGet, agentPath(id, "/watch")+watchQuery(opts), nil)
	if err != nil {
		return nil, err
	}
	return &WatchStream{ctx: ctx, body: resp.Body}, nil
}

// WatchAgent implements LocalService over Watch.
func (c *LocalClient) WatchAgent(ctx context.Context, id string, opts WatchOptions, send func(WatchMessage) error) error {
	s, err := c.Watch(ctx, id, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	for m := range s.Messages() {
		if err := send(m); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return s.Err()
}

// Say implements LocalService.
func (c *LocalClient) Say(ctx context.Context, id string, req SayRequest) (EventRef, error) {
	var v EventRef
	return v, c.do(ctx, http.MethodPost, agentPath(id, "/say"), req, &v)
}

// SetModel implements LocalService.
func (c *LocalClient) SetModel(ctx context.Context, id string, req ModelRequest) (EventRef, error) {
	var v EventRef
	return v, c.do(ctx, http.MethodPost, agentPath(id, "/model"), req, &v)
}

// talkRoutes adds the say, model and watch calls to mux.
func talkRoutes(mux *http.ServeMux, svc LocalService) {
	mux.HandleFunc("POST "+PathAgents+"/{id}/say", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		var req SayRequest
		if err := decodeJSON(r.Body, maxSayRequest, &req); err != nil {
			writeError(w, err)
			return
		}
		reply(w, func() (any, error) { return svc.Say(r.Context(), id, req) })
	}))
	mux.HandleFunc("POST "+PathAgents+"/{id}/model", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		var req ModelRequest
		replyDecoded(w, r, &req, func() (any, error) { return svc.SetModel(r.Context(), id, req) })
	}))
	mux.HandleFunc("GET "+PathAgents+"/{id}/watch", withAgent(func(w http.ResponseWriter, r *http.Request, id string) {
		serveWatch(w, r, svc, id)
	}))
}
