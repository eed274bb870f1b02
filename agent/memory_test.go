package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/render"
)

// FORMAT §6.4: every model request of a turn carries the working memory
// of its step's Env, after the instructions; a change between steps shows
// in the next request, and the memory is never journaled.
func TestWorkingMemoryInEveryRequest(t *testing.T) {
	b := newBook(t)
	b.add(journal.KindModelChange, sim)
	b.add(journal.KindInstruction, journal.Instruction{Role: "system", Text: "Be brief."})
	b.add(journal.KindUser, journal.UserMessage{Text: "find a"})
	c := &script{answers: []provider.Response{{Events: []provider.Output{call("c1", "a")}}, {Events: []provider.Output{text("done")}}}}
	mems := []string{"- first note\n", "- first note\n", "- second note\n"}
	for i := 0; ; i++ {
		env := envFor(b, c, &box{})
		env.WorkingMemory = mems[min(i, len(mems)-1)]
		if _, err := Step(t.Context(), env); errors.Is(err, ErrIdle) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if len(c.got) != 2 {
		t.Fatalf("%d requests, want 2", len(c.got))
	}
	for i, want := range []string{"- first note", "- second note"} {
		body := string(c.got[i].Body)
		block := strings.Index(body, `"Working memory (your notes`)
		if block < 0 || !strings.Contains(body[block:], want) || strings.Index(body, "Be brief.") > block || strings.Index(body, "find a") < block {
			t.Errorf("request %d: the block with %q is not between the instructions and the conversation:\n%s", i, want, body)
		}
	}
	for _, e := range b.events {
		if strings.Contains(string(e.Body), "note") || strings.Contains(string(e.Body), render.WorkingMemoryHeader[:14]) {
			t.Errorf("the working memory was journaled: %s %s", e.Kind, e.Body)
		}
	}
}
