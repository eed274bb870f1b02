package render_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/render"
	"github.com/agentcapsule/capsule/render/rendertest"
	"github.com/agentcapsule/capsule/render/wire"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// TestIncrementalProperties feeds random journals in random growing
// prefixes to one wire.Incremental, for random targets and windows, and
// checks every result against wire.Render of the same prefix: the same
// bytes, the same report, the same error. Between prefixes it may change
// the target (all of it, only the model within its API, only the tool
// set, only the window or only the working memory, or back to the first
// target), shrink the journal, or insert an event earlier in total order
// (as a merge does): each must give the full render's answer too.
//
// rapid prints the seed of a failure; replay it with
//
//	go test ./render -run TestIncrementalProperties -rapid.seed=SEED
func TestIncrementalProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		first := rendertest.GenTarget(t)
		tg := first
		events := rendertest.GenJournal(t, tg.Producer()).Journal.Events()
		var inc wire.Incremental
		n := 0
		for round := 0; n < len(events) || round == 0; round++ {
			switch rapid.IntRange(0, 13).Draw(t, "change") {
			case 0:
				tg = rendertest.GenTarget(t)
			case 1:
				n = rapid.IntRange(0, n).Draw(t, "shrink")
			case 2:
				events = insertEarlier(t, events, n)
			case 3:
				tg = switchModel(t, tg)
			case 4:
				tg = first // a switch back: A -> B -> A
			case 5:
				tg.Tools = rendertest.GenTarget(t).Tools
			case 6:
				tg.Window = rendertest.GenTarget(t).Window
			case 7:
				tg.WorkingMemory = rapid.SampledFrom([]string{"", " \n", "- a note\n", "- a note\n- another\n"}).Draw(t, "memory")
			}
			n = rapid.IntRange(n, len(events)).Draw(t, "prefix")
			compareRender(t, &inc, events[:n], tg)
		}
		compareRender(t, &inc, events, tg) // the same journal again
	})
}

// switchModel returns tg with another model of the same API (its tools,
// window and thinking kept): a model switch that keeps the wire format,
// where what an Incremental remembers of the API must still be checked.
func switchModel(t *rapid.T, tg render.Target) render.Target {
	var same []render.Target
	for _, o := range rendertest.Targets {
		if o.API == tg.API {
			same = append(same, o)
		}
	}
	o := rapid.SampledFrom(same).Draw(t, "model")
	tg.Model, tg.Provider = o.Model, o.Provider
	return tg
}

// compareRender checks that inc renders events for tg as wire.Render does.
func compareRender(t *rapid.T, inc *wire.Incremental, events []journal.Event, tg render.Target) {
	want, wantRep, wantErr := wire.Render(events, tg)
	got, gotRep, gotErr := inc.Render(events, tg)
	if !errors.Is(gotErr, wantErr) && (gotErr == nil || wantErr == nil || gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%d events: error %v, want %v", len(events), gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%d events, %s %s window %d: body differs:\n got %s\nwant %s", len(events), tg.API, tg.Model, tg.Window, got, want)
	}
	if d := cmp.Diff(wantRep, gotRep); d != "" {
		t.Fatalf("%d events: report differs (-want +got):\n%s", len(events), d)
	}
}

// insertEarlier returns events with a new event placed before index n
// (within the prefix already rendered), renumbered so the journal stays in
// total order: a merge of events another machine wrote meanwhile.
func insertEarlier(t *rapid.T, events []journal.Event, n int) []journal.Event {
	if n == 0 {
		return events
	}
	at := rapid.IntRange(0, n-1).Draw(t, "insertAt")
	j := &rendertest.Journal{}
	switch rapid.IntRange(0, 2).Draw(t, "insertKind") {
	case 0:
		j.User("merged request")
	case 1:
		j.System("merged instruction")
	default:
		j.Result("merged-call", "search", "merged result")
	}
	out := make([]journal.Event, 0, len(events)+1)
	out = append(out, events[:at]...)
	out = append(out, j.Events()[0])
	out = append(out, events[at:]...)
	for i := range out {
		out[i].Seq, out[i].Clock = uint64(i+1), uint64(i+1)
	}
	return out
}

// TestIncrementalLong grows a long journal turn by turn through one
// wire.Incremental into a window that drops most of it, so the digest,
// the cut and the kept units move at every step, and compares each render
// with wire.Render.
func TestIncrementalLong(t *testing.T) {
	events := rendertest.Long(3_000, rendertest.Claude)
	for _, tg := range rendertest.Targets {
		tg.Window = 20_000
		tg.Tools = rendertest.ToolSet("read_file")
		var inc wire.Incremental
		for n := 2_000; n <= len(events); n += 97 {
			want, wantRep, err := wire.Render(events[:n], tg)
			if err != nil {
				t.Fatalf("%s: %v", tg.API, err)
			}
			got, gotRep, err := inc.Render(events[:n], tg)
			if err != nil {
				t.Fatalf("%s: incremental: %v", tg.API, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s %s, %d events: body differs", tg.API, tg.Model, n)
			}
			if d := cmp.Diff(wantRep, gotRep); d != "" {
				t.Fatalf("%s %s, %d events: report differs (-want +got):\n%s", tg.API, tg.Model, n, d)
			}
		}
	}
}

// TestIncrementalSegmentation checks the state an Incremental plans from
// after every random prefix: it is the segmentation of the whole prefix,
// field for field (units, pairing, deferred instructions, the counts the
// digest bounds come from).
func TestIncrementalSegmentation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tg := rendertest.GenTarget(t)
		events := rendertest.GenJournal(t, tg.Producer()).Journal.Events()
		var inc render.Incremental
		for n := 0; n < len(events); {
			n = rapid.IntRange(n+1, len(events)).Draw(t, "prefix")
			if err := render.SegmentsLikeFull(&inc, events[:n], tg); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestIncrementalTargetChange alternates two targets with different
// tokenizers (cl100k_base, o200k_base) over one growing journal: the
// counts remembered for one must not serve the other.
func TestIncrementalTargetChange(t *testing.T) {
	events := rendertest.Long(400, rendertest.GPT41)
	targets := []render.Target{{API: render.OpenAIChat, Model: "gpt-4", Window: 6000}, {API: render.OpenAIChat, Model: "gpt-4.1", Window: 6000}}
	var inc wire.Incremental
	for n := 100; n <= len(events); n += 50 {
		for _, tg := range targets {
			want, wantRep, err := wire.Render(events[:n], tg)
			if err != nil {
				t.Fatal(err)
			}
			got, gotRep, err := inc.Render(events[:n], tg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s, %d events: body differs", tg.Model, n)
			}
			if d := cmp.Diff(wantRep, gotRep); d != "" {
				t.Fatalf("%s, %d events: report differs (-want +got):\n%s", tg.Model, n, d)
			}
		}
	}
}

// TestIncrementalToolNameShift grows a journal whose later call uses, as
// a valid tool name, the request name an earlier invalid name was given:
// the earlier name then goes by another request name, in every unit that
// used it, so units built before must not be replayed under the old one.
func TestIncrementalToolNameShift(t *testing.T) {
	p := rendertest.Claude
	j := &rendertest.Journal{}
	j.User("go").Exchange(p, "s1", "c1", "bad name!", `{}`, "one").Say(p, "s1", "done").User("again")
	tg := render.Target{API: render.Anthropic, Model: p.Model}
	_, rep, err := wire.Render(j.Events(), tg)
	if err != nil || len(rep.ToolNames) != 1 {
		t.Fatalf("first render: %v, tool names %v", err, rep)
	}
	var inc wire.Incremental
	compare := func() {
		t.Helper()
		want, wantRep, err := wire.Render(j.Events(), tg)
		if err != nil {
			t.Fatal(err)
		}
		got, gotRep, err := inc.Render(j.Events(), tg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d events: body differs:\n got %s\nwant %s", j.Len(), got, want)
		}
		if d := cmp.Diff(wantRep, gotRep); d != "" {
			t.Fatalf("report differs (-want +got):\n%s", d)
		}
	}
	compare()
	j.Exchange(p, "s2", "c2", rep.ToolNames[0].To, `{}`, "two").User("more")
	compare()
}

// TestReserveBound checks, for random journals and targets, that the
// fit's cheap bound of the room a digest needs is never below the exact
// count at any cut: where the fit trusts the bound it must decide as the
// exact count would.
func TestReserveBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tg := rendertest.GenTarget(t)
		j := rendertest.GenJournal(t, tg.Producer()).Journal
		if rapid.Bool().Draw(t, "oddRequest") {
			// Dense in tokens per byte, and quoting expands control
			// and invalid bytes: the bound is tightest here.
			odd := rapid.StringOfN(rapid.RuneFrom([]rune("a,1 .é\u2028\x00日\n\"")), 100, 400, -1)
			j.User(odd.Draw(t, "request"))
			j.Say(tg.Producer(), "odd", "ok")
		}
		if err := render.ReserveBounded(j.Events(), tg); err != nil {
			t.Fatal(err)
		}
	})
}

// TestIncrementalCutMovesBack grows a journal whose usage events move the
// calibrated factor down and up, so the window's cut moves back and forth
// between calls of one wire.Incremental: what it remembers of the part
// before the cut (the digest's summary) must follow it both ways.
func TestIncrementalCutMovesBack(t *testing.T) {
	p := rendertest.Claude
	j := &rendertest.Journal{}
	j.Add(journal.KindModelChange, journal.ModelChange{Provider: p.Provider, API: p.API, Model: p.Model})
	tg := render.Target{API: render.Anthropic, Model: p.Model, Window: 6000, Tools: rendertest.ToolSet("search")}
	var inc wire.Incremental
	var digests []string
	for turn := 0; turn < 60; turn++ {
		id := "c" + strconv.Itoa(turn)
		j.User("request "+id).Exchange(p, "s"+id, id, "search", `{"q":"x"}`, strings.Repeat("result words ", 40))
		// The factor is calibrated on the newest 32 usage events: swing
		// it between 1.05 and 2 (where the window holds about half).
		input := int64(1000)
		if turn%6 >= 3 {
			input = 2000
		}
		for k := 0; k < 32; k++ {
			j.Usage(p, input, 1000)
		}
		want, wantRep, err := wire.Render(j.Events(), tg)
		if err != nil {
			t.Fatal(err)
		}
		got, gotRep, err := inc.Render(j.Events(), tg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("turn %d: body differs:\n got %s\nwant %s", turn, got, want)
		}
		if d := cmp.Diff(wantRep, gotRep); d != "" {
			t.Fatalf("turn %d: report differs (-want +got):\n%s", turn, d)
		}
		digests = append(digests, wantRep.Digest)
	}
	back := 0
	for i := 1; i < len(digests); i++ {
		if digests[i] != "" && digests[i-1] != "" && droppedEvents(digests[i]) < droppedEvents(digests[i-1]) {
			back++
		}
	}
	if back == 0 {
		t.Fatalf("the cut never moved back: digests %q", digests)
	}
}

// droppedEvents reads the event count of a digest text.
func droppedEvents(digest string) int {
	n, _ := strconv.Atoi(strings.Fields(strings.TrimPrefix(digest, "[Context note: "))[0])
	return n
}
