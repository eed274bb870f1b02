package compat

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/agentcapsule/capsule/journal"
)

// BenchmarkGateVsVerify compares compat.Check, which a node runs before it
// starts an agent's runner, with journal.Check, the verification the node's
// open of the journal already does, on one journal of 100,000 events.
func BenchmarkGateVsVerify(b *testing.B) {
	w := journal.NewWriter("m1")
	var buf bytes.Buffer
	p := journal.Producer{Provider: "p", API: "a", Model: "m"}
	for i := 0; i < 100000; i++ {
		var e journal.Event
		var err error
		switch i % 4 {
		case 0:
			e, err = w.Next(journal.KindUser, 1, "", journal.UserMessage{Text: fmt.Sprint("hello ", i)})
		case 1:
			e, err = w.Next(journal.KindToolCall, 1, "", journal.ToolCall{CallID: fmt.Sprint("c", i), Name: "read_file", Arguments: []byte(`{"path":"a"}`), Producer: p})
		case 2:
			e, err = w.Next(journal.KindToolResult, 1, "", journal.ToolResult{CallID: fmt.Sprint("c", i-1), Name: "read_file", Content: "some content here"})
		default:
			e, err = w.Next(journal.KindAssistant, 1, "", journal.AssistantMessage{Text: "ok then", Producer: p})
		}
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(journal.Encode(e))
		buf.WriteByte('\n')
	}
	data := buf.Bytes()
	spec := []byte(`{"version":1,"workdir":"","env":{},"secrets":[],"tools":[],"sandbox":{"network":"none"}}`)
	b.Run("compat.Check", func(b *testing.B) {
		for range b.N {
			if _, err := Check(Input{Manifest: manifestFor(2), Spec: spec, Journal: bytes.NewReader(data)}, Current()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("journal.Check", func(b *testing.B) {
		for range b.N {
			if _, _, err := journal.Check(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Logf("%d events, %d bytes", 100000, len(data))
}
