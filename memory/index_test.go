package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/schema"
)

func corpusOf(t *testing.T, steps int, wm string) (*chat, *Corpus) {
	c := newChat(t, "m1")
	c.steps(0, steps)
	return c, NewCorpus(c.events, []byte(wm))
}

// FORMAT §11.7.2: the same journal, notes and embedder give the same bytes.
func TestBuildIsDeterministic(t *testing.T) {
	_, corpus := corpusOf(t, 30, "# notes\nthe gateway owns TLS\n")
	a := encode(t, build(t, corpus, Hash{}))
	_, again := corpusOf(t, 30, "# notes\nthe gateway owns TLS\n")
	b := encode(t, build(t, again, Hash{}))
	if !bytes.Equal(a, b) {
		t.Fatal("two builds of the same corpus differ")
	}
	if err := schema.CheckIndex(a, 2); err != nil {
		t.Fatalf("the index does not read as version 2: %v", err)
	}
	x, rep := reopen(t, a, corpus, Hash{})
	if rep.Mode != ModeUnchanged || rep.Embedded != 0 {
		t.Fatalf("reopening an up-to-date index: %+v", rep)
	}
	if !bytes.Equal(encode(t, x), a) {
		t.Fatal("an unchanged refresh changed the bytes")
	}
}

// Encode writes what encoding/json writes for the frozen shape.
func TestEncodeIsEncodingJSON(t *testing.T) {
	c, corpus := corpusOf(t, 3, "notes")
	c.user(strings.Repeat("long text ", 400)) // spans
	corpus = NewCorpus(c.events, []byte("notes"))
	x := build(t, corpus, Hash{})
	got := encode(t, x)
	var f fileIndex
	if err := json.Unmarshal(got, &f); err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append(want, '\n')) {
		t.Fatalf("Encode differs from encoding/json:\n%s\n%s", got[:200], want[:200])
	}
	if len(f.Chunks) != x.Len() || x.Len() < 3*3+2 {
		t.Fatalf("%d chunks in the file, %d in the index", len(f.Chunks), x.Len())
	}
}

// Only new events are embedded when the journal grew, and the result is
// the clean build's.
func TestRefreshAfterGrowthIsIncremental(t *testing.T) {
	c, corpus := corpusOf(t, 20, "wm")
	stored := encode(t, build(t, corpus, Hash{}))
	c.steps(20, 2)
	grown := NewCorpus(c.events, []byte("wm"))
	x, rep := reopen(t, stored, grown, Hash{})
	if rep.Mode != ModeIncremental || rep.Embedded != 6 {
		t.Fatalf("want an incremental refresh embedding 6 texts, got %+v", rep)
	}
	if !bytes.Equal(encode(t, x), encode(t, build(t, grown, Hash{}))) {
		t.Fatal("the incremental index differs from a clean build")
	}
}

// Add, the update after a step, gives the clean build's index too, and
// re-embeds only changed spans of the working memory.
func TestAddEqualsCleanBuild(t *testing.T) {
	c, corpus := corpusOf(t, 10, "first notes")
	x := build(t, corpus, Hash{})
	n := len(c.events)
	c.steps(10, 1)
	rep, err := x.Add(ctx, Hash{}, c.events[n:], []byte("first notes, then more"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Embedded != 4 {
		t.Fatalf("want 3 event texts and 1 working-memory span embedded, got %+v", rep)
	}
	want := encode(t, build(t, NewCorpus(c.events, []byte("first notes, then more")), Hash{}))
	if !bytes.Equal(encode(t, x), want) {
		t.Fatal("Add differs from a clean build")
	}
	if _, err := x.Add(ctx, Hash{}, c.events[n:], nil); !errors.Is(err, ErrNotContinuation) {
		t.Fatalf("adding the same events again: %v", err)
	}
}

// An embedder swap, with the same dimensions or others, rebuilds in full
// and never keeps a vector of the old embedder.
func TestEmbedderSwap(t *testing.T) {
	_, corpus := corpusOf(t, 15, "notes on the gateway")
	stored := encode(t, build(t, corpus, Hash{}))
	for _, e := range []*fake{
		{dims: HashDims, model: "sha256:other", normalized: true}, // same dims and dtype
		{dims: 64, model: "sha256:small"},                         // other dims, float16
	} {
		x, rep := reopen(t, stored, corpus, e)
		if rep.Mode != ModeFull || rep.Reused != 0 || !strings.Contains(rep.Reason, "embedder changed") {
			t.Fatalf("%d dims: want a full rebuild for a new embedder, got %+v", e.dims, rep)
		}
		if !bytes.Equal(encode(t, x), encode(t, build(t, corpus, e))) {
			t.Fatalf("%d dims: the rebuilt index differs from a clean build", e.dims)
		}
		if _, err := x.Search(ctx, Hash{}, "gateway", 3); !errors.Is(err, ErrFingerprint) {
			t.Fatalf("%d dims: a search with the old embedder: %v", e.dims, err)
		}
	}
}

// FORMAT §7.9: a merge of two diverged copies gives the index of a clean
// build of the merged journal, from either copy's index.
func TestMergedJournalGivesCleanIndex(t *testing.T) {
	base := newChat(t, "m1")
	base.steps(0, 5)
	a := &chat{t: t, w: journal.NewWriter("m1", base.events...), events: append([]journal.Event(nil), base.events...)}
	b := &chat{t: t, w: journal.NewWriter("m2", base.events...), events: append([]journal.Event(nil), base.events...)}
	a.steps(5, 3)
	b.steps(100, 4)
	merged, err := journal.Merge(a.events, b.events)
	if err != nil {
		t.Fatal(err)
	}
	mc := NewCorpus(merged, []byte("notes"))
	want := encode(t, build(t, mc, Hash{}))
	for name, side := range map[string]*chat{"a": a, "b": b} {
		stored := encode(t, build(t, NewCorpus(side.events, []byte("notes")), Hash{}))
		x, rep := reopen(t, stored, mc, Hash{})
		if rep.Mode != ModeIncremental {
			t.Errorf("copy %s: want an incremental refresh after a merge, got %+v", name, rep)
		}
		if !bytes.Equal(encode(t, x), want) {
			t.Errorf("copy %s: the merged index differs from a clean build", name)
		}
	}
}

// A damaged or lying index is rebuilt in full to the clean build.
func TestDamagedIndexRebuilds(t *testing.T) {
	c, corpus := corpusOf(t, 12, "notes")
	good := encode(t, build(t, corpus, Hash{}))
	want := good
	other := newChat(t, "m1")
	other.steps(50, 12) // same machine, other events: a replaced journal
	replaced := encode(t, build(t, NewCorpus(other.events, []byte("notes")), Hash{}))
	cases := map[string][]byte{
		"truncated":            good[:len(good)/2],
		"empty":                {},
		"tampered digest":      bytes.Replace(good, []byte(`"text":"sha256:`), []byte(`"text":"sha256:0`), 1),
		"tampered fingerprint": bytes.Replace(good, []byte(`"fingerprint":"sha256:`), []byte(`"fingerprint":"sha256:0`), 1),
		"dropped chunk":        editChunks(t, good, func(cs []fileChunk) []fileChunk { return cs[1:] }),
		"extra chunk": editChunks(t, good, func(cs []fileChunk) []fileChunk {
			extra := cs[0]
			extra.Event = "sha256:" + strings.Repeat("f", 64)
			return append(cs, extra)
		}),
		"other journal": replaced,
		"stale":         []byte(schema.StaleIndex),
	}
	for name, b := range cases {
		x, rep := reopen(t, b, corpus, Hash{})
		if rep.Mode != ModeFull || rep.Reused != 0 {
			t.Errorf("%s: want a full rebuild, got %+v", name, rep)
		}
		if !bytes.Equal(encode(t, x), want) {
			t.Errorf("%s: the rebuilt index differs from a clean build", name)
		}
	}
	_ = c
}

func editChunks(t *testing.T, b []byte, edit func([]fileChunk) []fileChunk) []byte {
	var f fileIndex
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	f.Chunks = edit(f.Chunks)
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// An embedder that fails halfway leaves no index: the caller keeps the old
// one. Texts it refuses are reported by source, never dropped.
func TestEmbedderFailures(t *testing.T) {
	c, corpus := corpusOf(t, 200, "notes") // 600 texts: three batches
	e := &fake{dims: 32, model: "sha256:f", failAfter: 300}
	x, rep, err := Build(ctx, corpus, e)
	if err == nil || x != nil || !strings.Contains(err.Error(), "endpoint went away") {
		t.Fatalf("want the outright failure and no index, got %v, %v", x, err)
	}
	if rep == nil || rep.Mode != ModeFull {
		t.Fatalf("report: %+v", rep)
	}
	c.user("please embed the forbidden word")
	corpus = NewCorpus(c.events, []byte("notes"))
	e = &fake{dims: 32, model: "sha256:f", failText: "forbidden"}
	x, rep, err = Build(ctx, corpus, e)
	if !errors.Is(err, ErrIncomplete) || x != nil {
		t.Fatalf("want ErrIncomplete and no index, got %v", err)
	}
	last := c.events[len(c.events)-1].ID
	if len(rep.Failed) != 1 || rep.Failed[0].Event != last || !strings.Contains(err.Error(), last) {
		t.Fatalf("the report must name the refused event %s: %+v, %v", last, rep.Failed, err)
	}
	e = &fake{dims: 32, model: "sha256:f", failText: "e"} // every text has an e: all refused
	x, rep, err = Build(ctx, corpus, e)
	if !errors.Is(err, ErrIncomplete) || x != nil || len(rep.Failed) != rep.Chunks {
		t.Fatalf("all refused: want ErrIncomplete naming every chunk, got %d of %d, %v", len(rep.Failed), rep.Chunks, err)
	}
}

// An edit of the working memory re-embeds only its chunks whose text
// changed; the events' vectors are kept.
func TestRefreshAfterWorkingMemoryEdit(t *testing.T) {
	long := strings.Repeat("the gateway owns TLS termination and the billing job runs at noon. ", 80) // several spans
	c, corpus := corpusOf(t, 8, long)
	stored := encode(t, build(t, corpus, Hash{}))
	edited := NewCorpus(c.events, []byte(long+"New: the mailer moved to port 2525.\n"))
	x, rep := reopen(t, stored, edited, Hash{})
	spans := len(WorkingMemoryChunks([]byte(long)))
	if rep.Mode != ModeIncremental || rep.Embedded == 0 || rep.Embedded >= spans || spans < 3 {
		t.Fatalf("want only the changed spans of %d embedded, got %+v", spans, rep)
	}
	if !bytes.Equal(encode(t, x), encode(t, build(t, edited, Hash{}))) {
		t.Fatal("the refreshed index differs from a clean build")
	}
}

// decode accepts exactly what schema.CheckIndex accepts at version 2.
func TestDecodeAgreesWithCheckIndex(t *testing.T) {
	_, corpus := corpusOf(t, 2, "wm")
	good := string(encode(t, build(t, corpus, Hash{})))
	for name, b := range map[string]string{
		"built":             good,
		"stale":             schema.StaleIndex,
		"unknown member":    strings.Replace(good, `{"version":2,`, `{"version":2,"extra":1,`, 1),
		"unknown in chunk":  strings.Replace(good, `"vector":`, `"x":1,"vector":`, 1),
		"version 3":         strings.Replace(good, `{"version":2,`, `{"version":3,`, 1),
		"chunks null":       `{"version":2,"embedder":null,"watermark":null,"chunks":null}`,
		"half stale":        strings.Replace(good, `"watermark":{`, `"watermark":null,"w":{`, 1),
		"not json":          `{"version":2,`,
		"embedder only set": `{"version":2,"embedder":{"fingerprint":"x"},"watermark":null,"chunks":[]}`,
	} {
		_, err := decode([]byte(b))
		want := schema.CheckIndex([]byte(b), 2)
		if (err == nil) != (want == nil) && !(want == nil && strings.Contains(fmt.Sprint(err), "fingerprint")) {
			t.Errorf("%s: decode says %v, CheckIndex %v", name, err, want)
		}
	}
}
