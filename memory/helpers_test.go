package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
)

var ctx = context.Background()

// chat builds a journal on one machine: for each text a user message, an
// assistant answer and a tool result, so every indexed kind appears.
type chat struct {
	t      testing.TB
	w      *journal.Writer
	events []journal.Event
}

func newChat(t testing.TB, machine string) *chat {
	return &chat{t: t, w: journal.NewWriter(machine)}
}

var producer = journal.Producer{Provider: "test", API: "chat", Model: "m"}

func (c *chat) add(kind journal.Kind, body any) journal.Event {
	c.t.Helper()
	e, err := c.w.Next(kind, 0, "", body)
	if err != nil {
		c.t.Fatal(err)
	}
	c.events = append(c.events, e)
	return e
}

func (c *chat) user(text string) journal.Event {
	return c.add(journal.KindUser, journal.UserMessage{Text: text})
}

func (c *chat) assistant(text string) journal.Event {
	return c.add(journal.KindAssistant, journal.AssistantMessage{Text: text, Producer: producer})
}

func (c *chat) tool(content string) journal.Event {
	return c.add(journal.KindToolResult, journal.ToolResult{CallID: "c", Content: content})
}

func (c *chat) usage() journal.Event {
	return c.add(journal.KindUsage, journal.Usage{Producer: producer, InputTokens: 1})
}

// steps appends n steps of conversation starting at number from.
func (c *chat) steps(from, n int) {
	for i := from; i < from+n; i++ {
		c.user(fmt.Sprintf("question %d about the %s service", i, topics[i%len(topics)]))
		c.assistant(fmt.Sprintf("answer %d: the %s service restarts nightly", i, topics[(i+1)%len(topics)]))
		c.tool(fmt.Sprintf("log line %d: %s", i, strings.Repeat("ok ", i%5)))
		c.usage()
	}
}

var topics = []string{"billing", "search", "gateway", "auth", "storage", "mailer"}

// fake is a second embedder: a deterministic vector from byte counts,
// with a chosen model and dimension, and faults on demand.
type fake struct {
	dims       int
	model      string
	normalized bool
	// failAfter makes Embed fail outright once it has embedded this many
	// texts (0: never).
	failAfter int
	// failText makes every text containing it fail with an EmbedError.
	failText string
	done     int
}

func (f *fake) Identity() Identity {
	return Identity{Name: "fake", Dims: f.dims, Model: f.model, Tokenizer: "fake-tok/1", Normalized: f.normalized}
}

func (f *fake) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	ee := &EmbedError{Failed: map[int]error{}}
	for i, t := range texts {
		if f.failAfter > 0 && f.done >= f.failAfter {
			return nil, errors.New("endpoint went away")
		}
		f.done++
		if f.failText != "" && strings.Contains(t, f.failText) {
			ee.Failed[i] = errors.New("refused by the endpoint")
			continue
		}
		v := make([]float32, f.dims)
		for j := 0; j < len(t); j++ {
			v[int(t[j])%f.dims] += 0.25
		}
		out[i] = v
	}
	if len(ee.Failed) == len(texts) {
		return nil, ee // all refused: no vectors (the Embedder contract allows it)
	}
	if len(ee.Failed) > 0 {
		return out, ee
	}
	return out, nil
}

// build is a clean build that must succeed.
func build(t testing.TB, c *Corpus, e Embedder) *Index {
	t.Helper()
	x, _, err := Build(ctx, c, e)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func encode(t testing.TB, x *Index) []byte {
	t.Helper()
	b, err := x.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reopen decodes x's file and refreshes it against c.
func reopen(t *testing.T, b []byte, c *Corpus, e Embedder) (*Index, *Report) {
	t.Helper()
	old, problem := decodeStored(b, Version)
	if problem != "" {
		t.Logf("stored index: %s", problem)
	}
	x, rep, err := Refresh(ctx, old, c, e)
	if err != nil {
		t.Fatal(err)
	}
	return x, rep
}
