package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/journal"
)

// `capsule agent chat`: each line typed is said to the agent; what the
// agent does is shown as it happens (the assistant's text as it streams,
// then tool calls and results, model changes, moves and state changes as
// they are journaled). Leaving the chat leaves the agent running.

func newAgentChatCmd() *cobra.Command {
	var data string
	c := &cobra.Command{
		Use:   "chat AGENT",
		Short: "Talk with an agent: each line is a message, its answers stream live",
		Long: `Talk with an agent the node on --data holds. Each line read from stdin is
sent as a user message (as capsule agent say does); the assistant's text is
shown as the model generates it, and tool calls and results, model changes,
moves and state changes as the node journals them. Ctrl-C or the end of
stdin leaves the chat and leaves the agent running. stdin may be a pipe.`,
		Example: `  capsule agent chat 01J... --data ~/capsule-a
  printf 'list the files\n' | capsule agent chat 01J... --data ~/capsule-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := localClient(data)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			ch := &chat{cl: cl, id: args[0], out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), prompt: isTerminal(cmd.InOrStdin())}
			return ch.run(ctx, cmd.InOrStdin())
		},
	}
	dataFlag(c, &data)
	return c
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// chat is one chat session. mu guards the output and mine; the input
// loop holds it while a say is in flight, so that the watch learns the
// event is this chat's before it shows it.
type chat struct {
	cl     *api.LocalClient
	id     string
	out    io.Writer
	errOut io.Writer
	prompt bool

	mu       sync.Mutex
	mine     map[string]bool // user events this chat said: not shown again
	streamed map[string]bool // steps whose text was shown as deltas
	midLine  bool            // the last output left a line open
}

// run chats until ctx ends or stdin does; either leaves the agent running.
func (c *chat) run(ctx context.Context, stdin io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.mine, c.streamed = map[string]bool{}, map[string]bool{}
	s, err := c.cl.Watch(ctx, c.id, api.WatchOptions{Live: true})
	if err != nil {
		return err
	}
	watched := make(chan error, 1)
	go func() { watched <- c.watch(ctx, s) }()
	lines := readLines(ctx, stdin, c.errOut)
	for {
		c.showPrompt()
		select {
		case <-ctx.Done():
			return nil
		case err := <-watched:
			return err
		case line, ok := <-lines:
			if !ok {
				return nil
			}
			c.say(ctx, line)
		}
	}
}

// readLines sends r's lines on the channel it returns, closed at EOF, at
// a read error (told on errOut) or once ctx ends (a read in progress
// then ends with r).
func readLines(ctx context.Context, r io.Reader, errOut io.Writer) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), api.MaxSayText+1)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintf(errOut, "capsule: chat: stdin: %v (a message is at most %d bytes)\n", err, api.MaxSayText)
		}
	}()
	return lines
}

// say sends one line; a refusal is shown and the chat goes on.
func (c *chat) say(ctx context.Context, line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ref, err := c.cl.Say(ctx, c.id, api.SayRequest{Text: line})
	if err != nil {
		c.endLine()
		fmt.Fprintf(c.errOut, "capsule: say: %v\n", err)
		return
	}
	c.mine[ref.ID] = true
}

func (c *chat) showPrompt() {
	if !c.prompt {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLine()
	fmt.Fprint(c.out, "> ")
	c.midLine = true
}

// watch shows the watch's messages until it ends; one cut off for lagging
// is opened again (what it missed is in the journal: capsule agent log).
func (c *chat) watch(ctx context.Context, s *api.WatchStream) error {
	for {
		lagged := false
		for m := range s.Messages() {
			if m.Lagged {
				lagged = true
				break
			}
			c.show(m)
		}
		s.Close()
		if ctx.Err() != nil {
			return nil
		}
		if !lagged {
			if err := s.Err(); err != nil {
				return err
			}
			return errors.New("chat: the node ended the watch")
		}
		c.note("fell behind the agent; some output was skipped (capsule agent log shows it)")
		var err error
		if s, err = c.cl.Watch(ctx, c.id, api.WatchOptions{Live: true}); err != nil {
			return err
		}
	}
}

// show prints one message of the watch.
func (c *chat) show(m api.WatchMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case m.Delta != nil:
		c.delta(*m.Delta)
	case m.State != nil:
		c.line("[%s] %s", m.State.State, m.State.Reason)
	case m.Event != nil:
		e, err := m.JournalEvent()
		if err != nil {
			c.line("[unreadable event] %v", err)
			return
		}
		c.event(&e)
	}
}

func (c *chat) delta(d api.WatchDelta) {
	if !c.streamed[d.Step] {
		c.endLine()
		fmt.Fprint(c.out, "assistant: ")
		c.streamed[d.Step] = true
	}
	fmt.Fprint(c.out, d.Text)
	c.midLine = !strings.HasSuffix(d.Text, "\n")
}

// event prints a journaled event: the assistant's text unless it was
// streamed, every other kind as capsule log summarizes it; this chat's
// own messages and usage reports are not shown.
func (c *chat) event(e *journal.Event) {
	switch e.Kind {
	case journal.KindUser:
		if c.mine[e.ID] {
			delete(c.mine, e.ID)
			return
		}
		c.line("user: %s", summarize(e))
	case journal.KindAssistant:
		var body journal.AssistantMessage
		_ = json.Unmarshal(e.Body, &body)
		if body.Step != "" && c.streamed[body.Step] {
			delete(c.streamed, body.Step)
			c.endLine()
			return
		}
		c.line("assistant: %s", body.Text)
	case journal.KindUsage:
	default:
		c.line("[%s] %s", e.Kind, summarize(e))
	}
}

// line prints one whole line, closing an open one first.
func (c *chat) line(format string, args ...any) {
	c.endLine()
	fmt.Fprintln(c.out, strings.TrimRight(fmt.Sprintf(format, args...), " "))
}

func (c *chat) note(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.line("[%s]", msg)
}

func (c *chat) endLine() {
	if c.midLine {
		fmt.Fprintln(c.out)
		c.midLine = false
	}
}
