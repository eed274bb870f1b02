package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/api"
	"github.com/agentcapsule/capsule/transfer"
)

// logBuffer collects a node's log lines for a test to read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// TestMoveOutcomesCarryTheirReason: a move that fails says why, from the
// side that decided (issue 10 item 4): the transport's error when the
// target is down, the TLS refusal when the target does not trust the
// source, and the target's refusal with its epochs. The reason is in the
// move's result, in `move status`, in the source's log, and the target's
// log says what it refused.
func TestMoveOutcomesCarryTheirReason(t *testing.T) {
	cases := []struct {
		name       string
		setup      func(t *testing.T, a, b *Node, id string)
		outcome    string
		reason     string // in the result, the status and the source's log
		targetLogs string // in the target's log ("" when it is down)
	}{
		{"target down", func(t *testing.T, a, b *Node, id string) {
			b.Close(context.Background())
		}, api.OutcomeRolledBack, "connection refused", ""},
		{"target does not trust the source", func(t *testing.T, a, b *Node, id string) {
			if err := b.RemovePeer(t.Context(), string(a.ID())); err != nil {
				t.Fatal(err)
			}
		}, api.OutcomeRolledBack, "tls", "not a known peer"},
		{"target refuses the offer", func(t *testing.T, a, b *Node, id string) {
			// b has burned epoch 9 of the agent (a resolve it never promised),
			// so a's offer at epoch 2 is stale: a is a zombie and stays frozen.
			m := transfer.Message{Type: transfer.MsgResolve, Agent: id, Move: "01JBURNEDBURNEDBURNEDBURNED", Epoch: 9, From: string(a.ID()), To: string(b.ID())}
			body, _ := json.Marshal(m)
			if _, err := b.Message(t.Context(), string(a.ID()), api.Message{Call: "resolve", Body: body}); err != nil {
				t.Fatal(err)
			}
		}, api.OutcomeStale, "offer refused by " + "%b" + ": stale_epoch (it has seen epoch 9)", "reason=stale_epoch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			alog, blog := &logBuffer{}, &logBuffer{}
			cl := newCluster(t, nodeOpts{logger: alog.logger()}, nodeOpts{logger: blog.logger()})
			a, b := cl.nodes[0], cl.nodes[1]
			id := createAgent(t, a, "")
			c.setup(t, a, b, id)
			reason := strings.ReplaceAll(c.reason, "%b", string(b.ID()))
			res := move(t, a, b, id)
			if res.Outcome != c.outcome || !strings.Contains(res.Reason, reason) {
				t.Fatalf("result: outcome %s reason %q, want %s with %q", res.Outcome, res.Reason, c.outcome, reason)
			}
			st, err := a.MoveStatus(t.Context(), id)
			if err != nil || st.Reason != res.Reason || st.Outcome != res.Outcome {
				t.Errorf("move status = %+v, %v; want outcome %s and the result's reason %q", st, err, res.Outcome, res.Reason)
			}
			if !strings.Contains(alog.String(), "move outcome") || !strings.Contains(alog.String(), reason) {
				t.Errorf("the source's log does not give the reason %q:\n%s", reason, alog)
			}
			if c.targetLogs != "" && !strings.Contains(blog.String(), c.targetLogs) {
				t.Errorf("the target's log does not say %q:\n%s", c.targetLogs, blog)
			}
		})
	}
}

// TestMoveStatusWithoutMoveAndMoveToSelf: `move status` of an agent that
// never moved answers "no move" without an error, and a move to the
// node's own ID says so (issue 10 item 6).
func TestMoveStatusWithoutMoveAndMoveToSelf(t *testing.T) {
	cl := newCluster(t, nodeOpts{}, nodeOpts{})
	a := cl.nodes[0]
	id := createAgent(t, a, "")
	st, err := a.MoveStatus(t.Context(), id)
	if err != nil || st != (api.MoveStatus{Phase: api.PhaseNone}) {
		t.Errorf("move status of an agent that never moved = %+v, %v; want phase none", st, err)
	}
	_, err = a.Move(t.Context(), id, api.MoveRequest{To: string(a.ID())}, nil)
	if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), "own ID") {
		t.Errorf("move to the node's own ID: %v, want an invalid request naming its own ID", err)
	}
	waitSteps(t, a, id, 5) // still running here
}
