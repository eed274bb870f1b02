package memory

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agentcapsule/capsule/journal"
)

// The issue-15 benchmarks (run by bench/memory.sh, which adds peak RSS):
// BenchmarkIndex100k indexes 100,000 events from their journal bytes;
// BenchmarkAddStep updates that index after one agent step;
// BenchmarkSearch100k queries it (100,000 chunks); every one reports the
// index.json bytes per chunk beyond the text digests.

// benchEvents is the size of the benchmark journal; every event is a
// text-bearing one (user, tool result, assistant in turn), so it is also
// 100,000 chunks: the worst case for a journal of this length.
const benchEvents = 100_000

var bench struct {
	once    sync.Once
	journal []byte
	events  []journal.Event
	words   []string
	zipf    *rand.Zipf
	r       *rand.Rand
	w       *journal.Writer
}

// benchText is 8 to 40 words from a 20,000-word vocabulary, Zipf-distributed
// as natural text is.
func benchText() string {
	n := 8 + bench.r.Intn(33)
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(bench.words[bench.zipf.Uint64()])
	}
	return b.String()
}

func benchEvent(tb testing.TB, i int) journal.Event {
	var kind journal.Kind
	var body any
	switch text := benchText(); i % 3 {
	case 0:
		kind, body = journal.KindUser, journal.UserMessage{Text: text}
	case 1:
		kind, body = journal.KindToolResult, journal.ToolResult{CallID: fmt.Sprint("c", i), Content: text}
	default:
		kind, body = journal.KindAssistant, journal.AssistantMessage{Text: text, Producer: producer}
	}
	e, err := bench.w.Next(kind, 1, "", body)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

func benchSetup(tb testing.TB) {
	bench.once.Do(func() {
		bench.r = rand.New(rand.NewSource(15))
		syll := []string{"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "po", "an", "el", "or", "ist", "ent", "ion"}
		for len(bench.words) < 20000 {
			var w strings.Builder
			for range 2 + bench.r.Intn(3) {
				w.WriteString(syll[bench.r.Intn(len(syll))])
			}
			bench.words = append(bench.words, w.String())
		}
		bench.zipf = rand.NewZipf(bench.r, 1.1, 2, uint64(len(bench.words)-1))
		bench.w = journal.NewWriter("m0bench")
		var buf bytes.Buffer
		for i := range benchEvents {
			e := benchEvent(tb, i)
			bench.events = append(bench.events, e)
			buf.Write(journal.AppendEncode(nil, &e))
			buf.WriteByte('\n')
		}
		bench.journal = buf.Bytes()
	})
}

// bytesPerChunk is index.json's size per chunk without the text members
// ("text":"sha256:<64 hex>", and its comma).
func bytesPerChunk(b []byte, chunks int) float64 {
	const textMember = len(`,"text":"sha256:`) + 64 + 1
	return float64(len(b)-chunks*textMember) / float64(chunks)
}

func BenchmarkIndex100k(b *testing.B) {
	benchSetup(b)
	var out []byte
	var n int
	var clk opClock
	for b.Loop() {
		clk.start()
		c, err := ReadCorpus(bytes.NewReader(bench.journal), nil)
		if err != nil {
			b.Fatal(err)
		}
		x, _, err := Build(ctx, c, Hash{})
		if err != nil {
			b.Fatal(err)
		}
		if out, err = x.Encode(); err != nil {
			b.Fatal(err)
		}
		n = x.Len()
		clk.stop()
	}
	clk.report(b)
	b.ReportMetric(float64(n), "chunks")
	b.ReportMetric(bytesPerChunk(out, n), "B/chunk-beyond-digests")
	b.ReportMetric(float64(len(out))/(1<<20), "MiB-index.json")
}

// benchIndex is the 100k index, built once.
var benchIndex struct {
	once sync.Once
	x    *Index
	heap uint64 // live heap the index (with its corpus texts) holds
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func benchIndexed(b *testing.B) *Index {
	benchSetup(b)
	benchIndex.once.Do(func() {
		before := heapInUse()
		benchIndex.x = build(b, NewCorpus(bench.events, []byte("# notes\nkeep the gateway on 8443\n")), Hash{})
		benchIndex.heap = heapInUse() - before
	})
	return benchIndex.x
}

// BenchmarkAddStep is the update after one step of the agent: a user
// message, a tool result and an assistant reply (and the two events
// without text a step also writes would cost nothing) and an edit of the
// working memory.
func BenchmarkAddStep(b *testing.B) {
	x := benchIndexed(b)
	i := benchEvents
	wm := []byte("# notes\nkeep the gateway on 8443\n")
	var clk opClock
	for b.Loop() {
		b.StopTimer()
		step := []journal.Event{benchEvent(b, i), benchEvent(b, i+1), benchEvent(b, i+2)}
		i += 3
		wm = fmt.Appendf(wm, "- step %d\n", i)
		b.StartTimer()
		clk.start()
		if _, err := x.Add(ctx, Hash{}, step, wm); err != nil {
			b.Fatal(err)
		}
		clk.stop()
	}
	clk.report(b)
}

func BenchmarkSearch100k(b *testing.B) {
	x := benchIndexed(b)
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = strings.Join(strings.Fields(benchText())[:6], " ")
	}
	i := 0
	var clk opClock
	for b.Loop() {
		clk.start()
		if _, err := x.Search(ctx, Hash{}, queries[i%len(queries)], 10); err != nil {
			b.Fatal(err)
		}
		clk.stop()
		i++
	}
	clk.report(b)
	b.ReportMetric(float64(x.Len()), "chunks")
	b.ReportMetric(float64(benchIndex.heap)/(1<<20), "MiB-index-heap")
}

// BenchmarkReopen100k is what every folder verb pays before it can search:
// read the journal, decode the stored index and refresh it (unchanged).
func BenchmarkReopen100k(b *testing.B) {
	benchSetup(b)
	c, err := ReadCorpus(bytes.NewReader(bench.journal), nil)
	if err != nil {
		b.Fatal(err)
	}
	stored := encode(b, build(b, c, Hash{}))
	var clk opClock
	for b.Loop() {
		clk.start()
		c, err := ReadCorpus(bytes.NewReader(bench.journal), nil)
		if err != nil {
			b.Fatal(err)
		}
		old, problem := decodeStored(stored, Version)
		if problem != "" {
			b.Fatal(problem)
		}
		if _, rep, err := Refresh(ctx, old, c, Hash{}); err != nil || rep.Mode != ModeUnchanged {
			b.Fatal(rep, err)
		}
		clk.stop()
	}
	clk.report(b)
}
