package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
)

// The test toolboxes of the loop's own tests describe their tools as
// read-only tools that need no approval; a toolbox that did not would get
// the narrowest values (external, approval required).

func (x *box) Info(name string) (ToolInfo, bool) {
	return ToolInfo{Name: name, Effect: journal.EffectRead, Approval: ApprovalNever}, name == "look"
}

func (x *quickBox) Info(name string) (ToolInfo, bool) {
	return ToolInfo{Name: name, Effect: journal.EffectRead, Approval: ApprovalNever}, true
}

// effectBox is a Toolbox with an external tool "bump" that appends a line
// to a counter file outside any workspace (the external effect whose count
// the crash tests check) and a read tool "look".
type effectBox struct {
	counter  string // the counter file
	approval string // bump's rule
	desc     string // bump's description (another one is another tool)
	during   func() // called inside bump, after the effect
}

func (x *effectBox) Tools() []render.Tool {
	d := x.desc
	if d == "" {
		d = "bump the counter"
	}
	return []render.Tool{
		{Name: "bump", Description: d, Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		{Name: "look", Description: "look", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
}

func (x *effectBox) Run(_ context.Context, name string, args json.RawMessage) ToolOutput {
	if name != "bump" {
		return ToolOutput{Content: "looked"}
	}
	f, err := os.OpenFile(x.counter, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return ToolOutput{Content: err.Error(), IsError: true}
	}
	_, err = f.Write(append(args, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ToolOutput{Content: err.Error(), IsError: true}
	}
	if x.during != nil {
		x.during()
	}
	return ToolOutput{Content: "bumped"}
}

func (x *effectBox) Info(name string) (ToolInfo, bool) {
	switch name {
	case "bump":
		a := x.approval
		if a == "" {
			a = ApprovalNever
		}
		return ToolInfo{Name: name, Effect: journal.EffectExternal, Approval: a}, true
	case "look":
		return ToolInfo{Name: name, Effect: journal.EffectRead, Approval: ApprovalNever}, true
	}
	return ToolInfo{}, false
}

// bumps returns how many times bump ran.
func (x *effectBox) bumps(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(x.counter)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func newEffectBox(t *testing.T, approval string) *effectBox {
	return &effectBox{counter: filepath.Join(t.TempDir(), "counter"), approval: approval}
}

var simProducer = journal.Producer(sim)

// openCalls journals a user message and one step whose calls are ids, all
// of bump with arguments args.
func openCalls(b *book, args string, ids ...string) {
	b.add(journal.KindModelChange, sim)
	b.add(journal.KindUser, journal.UserMessage{Text: "go"})
	for _, id := range ids {
		b.add(journal.KindToolCall, journal.ToolCall{CallID: id, Name: "bump", Arguments: json.RawMessage(args), Producer: simProducer, Step: "s1"})
	}
}

const specA, specB = `{"version":2}`, `{"version":2,"env":{}}`

// effectEnv is the Env of one step over b's journal: fail, when set, is
// asked before every append and makes it fail (a crash: nothing written).
func effectEnv(b *book, x *effectBox, fail func(kinds []journal.Kind) bool) *Env {
	return &Env{Events: b.events, Tools: x, SpecDigest: SpecDigest([]byte(specA)),
		Append: func(kinds []journal.Kind, bodies []any) error {
			if fail != nil && fail(kinds) {
				return errCrash
			}
			return b.append(kinds, bodies)
		}}
}

var errCrash = errors.New("crash")

// lastOf returns the body of the newest event of kind k.
func lastOf[T any](t *testing.T, b *book, k journal.Kind) (T, string) {
	t.Helper()
	var v T
	for i := len(b.events) - 1; i >= 0; i-- {
		if b.events[i].Kind == k {
			if err := json.Unmarshal(b.events[i].Body, &v); err != nil {
				t.Fatal(err)
			}
			return v, b.events[i].ID
		}
	}
	t.Fatalf("no %s in the journal", k)
	return v, ""
}

func count(b *book, k journal.Kind) int {
	n := 0
	for _, e := range b.events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// decideCall journals a decision on the newest request of callID.
func decideCall(t *testing.T, b *book, callID, decision, reason string) string {
	t.Helper()
	d, err := CheckDecision(b.events, callID, Binding{})
	if err != nil {
		t.Fatal(err)
	}
	b.add(journal.KindApproval, journal.Approval{CallID: callID, Request: d.Request, Decision: decision, By: "alice", Reason: reason})
	return b.events[len(b.events)-1].ID
}
