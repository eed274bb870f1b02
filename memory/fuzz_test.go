package memory

import (
	"testing"

	"github.com/agentcapsule/capsule/schema"
)

// FuzzDecode: index.json is outside input (it travels in the capsule and
// is never trusted). Decoding any bytes never panics, and whatever decodes
// refreshes against a corpus without error.
func FuzzDecode(f *testing.F) {
	c := newChat(f, "m1")
	c.steps(0, 2)
	corpus := NewCorpus(c.events, []byte("notes"))
	x, _, err := Build(ctx, corpus, Hash{})
	if err != nil {
		f.Fatal(err)
	}
	good, err := x.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(schema.StaleIndex))
	f.Add([]byte(`{"version":2,"embedder":{"fingerprint":"","name":"","dims":1,"dtype":"int8","normalization":"l2","model":"m","tokenizer":"t","chunker":"c"},"watermark":{"events":0,"heads":{},"working_memory":""},"chunks":[{"span":[0,1],"text":"","vector":"AA=="}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		old, err := decode(b)
		if err != nil || old == nil {
			return
		}
		if _, _, err := Refresh(ctx, old, corpus, Hash{}); err != nil {
			t.Fatalf("refresh from a decoded index: %v", err)
		}
	})
}
