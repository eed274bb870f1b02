package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/capsule"
	"github.com/agentcapsule/capsule/journal"
	"github.com/agentcapsule/capsule/manifest"
	"github.com/agentcapsule/capsule/vfs"
)

func logCapsule(t *testing.T, epoch uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent")
	_, err := capsule.Init(vfs.OS{}, dir, capsule.InitConfig{Holder: manifest.Holder{Node: "n1", Epoch: epoch}})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func journalFile(dir string) string {
	return filepath.Join(dir, filepath.FromSlash(manifest.JournalPath))
}

// TestLogAppendCommitsManifest: append on a capsule writes the event under
// the holder epoch, then records the journal in the manifest (FORMAT §7.7).
func TestLogAppendCommitsManifest(t *testing.T) {
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	dir := logCapsule(t, 4)
	for _, body := range []string{`{"text":"hello"}`, `{"text":"again"}`} {
		if _, errs, code := capsuleCLI(t, "log", "append", dir, "--kind", "user", "--body", body); code != 0 {
			t.Fatalf("append: exit %d: %s", code, errs)
		}
	}
	data, _ := os.ReadFile(journalFile(dir))
	events, err := journal.Decode(bytes.NewReader(data))
	if err != nil || len(events) != 2 || events[0].Epoch != 4 {
		t.Fatalf("journal: %v, %+v", err, events)
	}
	c, err := capsule.Open(vfs.OS{}, dir, capsule.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Manifest().Journal, manifestJournal(journal.Summarize(events)); got.Digest != want.Digest || got.Bytes != want.Bytes || got.Events != 2 || got.Heads[events[0].Machine].ID != events[1].ID {
		t.Errorf("manifest journal = %+v, want %+v", got, want)
	}
	id, _ := os.ReadFile(filepath.Join(os.Getenv("CAPSULE_CONFIG_DIR"), "machine-id"))
	if strings.TrimSpace(string(id)) != events[0].Machine || events[1].Machine != events[0].Machine {
		t.Errorf("machine %q, machine-id file %q", events[0].Machine, id)
	}
	if out, _, code := capsuleCLI(t, "log", "verify", dir); code != 0 || !strings.Contains(out, "ok: 2 events") {
		t.Errorf("verify: exit %d: %s", code, out)
	}
	// Replace the committed journal by another valid one: the chain checks
	// pass, the manifest's digest does not.
	os.WriteFile(journalFile(dir), bytes.SplitAfter(data, []byte("\n"))[0], 0o644)
	if out, _, code := capsuleCLI(t, "log", "verify", dir); code != exitVerify || !strings.Contains(out, "committed:") {
		t.Errorf("verify of a replaced journal: exit %d: %s", code, out)
	}
}

// TestJournalTailCheck plugs the tail check into capsule.Verify: an
// uncommitted tail that continues the chains verifies; a forged one does not.
func TestJournalTailCheck(t *testing.T) {
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	dir := logCapsule(t, 1)
	if _, errs, code := capsuleCLI(t, "log", "append", dir, "--kind", "user", "--body", `{"text":"committed"}`); code != 0 {
		t.Fatal(errs)
	}
	// Two appends the manifest does not record yet: the uncommitted tail.
	for _, text := range []string{"tail 1", "tail 2"} {
		if _, errs, code := capsuleCLI(t, "log", "append", journalFile(dir), "--kind", "user", "--body", `{"text":"`+text+`"}`, "--epoch", "1"); code != 0 {
			t.Fatal(errs)
		}
	}
	opts := capsule.VerifyOptions{JournalTail: JournalTailCheck}
	rep, err := capsule.Verify(vfs.OS{}, dir, opts)
	if err != nil || !rep.OK() {
		t.Fatalf("verify with a good tail: %v %+v", err, rep)
	}
	data := mustRead(t, journalFile(dir))
	os.WriteFile(journalFile(dir), bytes.Replace(data, []byte("tail 2"), []byte("tail X"), 1), 0o644)
	rep, err = capsule.Verify(vfs.OS{}, dir, opts)
	if err != nil || rep.OK() || rep.Problems[0].Kind != capsule.KindJournal || !strings.Contains(rep.Problems[0].Detail, "line 3") {
		t.Fatalf("verify with a forged tail: %v %+v", err, rep)
	}
}

func TestLogAppendRefusesBadBody(t *testing.T) {
	t.Setenv("CAPSULE_CONFIG_DIR", t.TempDir())
	path := filepath.Join(t.TempDir(), "j.jsonl")
	for _, tc := range []struct{ kind, body, want string }{
		{"user", `{"txt":"typo"}`, `unknown field "txt"`},
		{"assistant", `{"text":"hi"}`, "producer.provider is required"},
		{"teleport", `{}`, "unknown kind"},
		{"user", `[1]`, "must be a JSON object"},
	} {
		_, errs, code := capsuleCLI(t, "log", "append", path, "--kind", tc.kind, "--body", tc.body)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("append %s %s: exit %d, %q; want exit 2 with %q", tc.kind, tc.body, code, errs, tc.want)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a refused append created the journal")
	}
}

// TestLogVerifyReportsLines: every problem comes with its line and machine,
// and the exit status is 1.
func TestLogVerifyReportsLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	for i, m := range []string{"a", "b", "a"} {
		if _, errs, code := capsuleCLI(t, "log", "append", path, "--kind", "user", "--body", `{"text":"x`+string(rune('0'+i))+`"}`, "--machine", m); code != 0 {
			t.Fatal(errs)
		}
	}
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte(`"x1"`), []byte(`"y1"`), 1), 0o644)
	out, _, code := capsuleCLI(t, "log", "verify", path)
	if code != exitVerify || !strings.Contains(out, path+":line 2: machine b: id:") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	out, _, _ = capsuleCLI(t, "log", "verify", path, "--json")
	if !strings.Contains(out, `"ok": false`) || !strings.Contains(out, `"line": 2`) {
		t.Errorf("--json output:\n%s", out)
	}
}

func TestLogShowsTimeline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	steps := [][]string{
		{"--kind", "user", "--body", `{"text":"list files"}`},
		{"--kind", "tool_call", "--body", `{"call_id":"c1","name":"ls","arguments":{"dir":"."},"producer":{"provider":"openai","api":"chat","model":"gpt-test"}}`},
		{"--kind", "tool_result", "--body", `{"call_id":"c1","content":"a.txt","is_error":true}`},
	}
	for _, s := range steps {
		args := append([]string{"log", "append", path, "--machine", "machine-one", "--time", "2026-03-04T05:06:07Z"}, s...)
		if _, errs, code := capsuleCLI(t, args...); code != 0 {
			t.Fatal(errs)
		}
	}
	out, _, code := capsuleCLI(t, "log", path)
	want := []string{
		"2026-03-04 05:06:07  machine-on      1    0  user         list files",
		`2026-03-04 05:06:07  machine-on      2    0  tool_call    c1 ls({"dir":"."})`,
		"2026-03-04 05:06:07  machine-on      3    0  tool_result  c1 -> [error] a.txt",
	}
	if code != 0 || strings.TrimRight(out, "\n") != strings.Join(want, "\n") {
		t.Errorf("exit %d, got:\n%s\nwant:\n%s", code, out, strings.Join(want, "\n"))
	}
	out, _, _ = capsuleCLI(t, "log", path, "--json", "--kind", "tool_call")
	data, _ := os.ReadFile(path)
	if lines := strings.Split(string(data), "\n"); out != lines[1]+"\n" {
		t.Errorf("--json --kind tool_call = %q, want line 2 %q", out, lines[1])
	}
}

func TestLogMergeRefusesFork(t *testing.T) {
	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "out.jsonl")
	for _, p := range []string{a, b} {
		if _, errs, code := capsuleCLI(t, "log", "append", p, "--kind", "user", "--body", `{"text":"`+p+`"}`, "--machine", "m"); code != 0 {
			t.Fatal(errs)
		}
	}
	_, errs, code := capsuleCLI(t, "log", "merge", a, b, "-o", out)
	if code != exitVerify || !strings.Contains(errs, "journal: fork: machine m seq 1") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused merge wrote its output")
	}
	// Different machines: the union.
	if _, errs, code := capsuleCLI(t, "log", "append", b, "--kind", "user", "--body", `{"text":"more"}`, "--machine", "n"); code != 0 {
		t.Fatal(errs)
	}
	os.WriteFile(b, bytes.SplitAfter(mustRead(t, b), []byte("\n"))[1], 0o644) // keep only n's event
	if _, errs, code := capsuleCLI(t, "log", "merge", a, b, "-o", out); code != 0 {
		t.Fatalf("merge: %s", errs)
	}
	if got, _, code := capsuleCLI(t, "log", "verify", out); code != 0 || !strings.Contains(got, "ok: 2 events from 2 machine(s)") {
		t.Errorf("verify merged: %s", got)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFollowPrintsNewEvents drives the follow loop directly with a short
// poll and a context it cancels.
func TestFollowPrintsNewEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	capsuleCLI(t, "log", "append", path, "--kind", "user", "--body", `{"text":"first"}`, "--machine", "m")
	var buf syncBuffer
	p := newPrinter(&buf, &buf, logFlags{json: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- follow(ctx, path, int64(len(mustRead(t, path))), p, 5*time.Millisecond) }()
	capsuleCLI(t, "log", "append", path, "--kind", "user", "--body", `{"text":"second"}`, "--machine", "m")
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"body":{"te`) // an append in progress: not printed yet
	f.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(buf.String(), "second") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, `"text":"second"`) {
		t.Errorf("followed output %q, want the second event only", got)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMachineIDCreatedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cfg", "machine-id")
	first, err := loadMachineID(path)
	if err != nil {
		t.Fatal(err)
	}
	second, err := loadMachineID(path)
	if err != nil || second != first || len(first) != 27 || first[0] != 'm' {
		t.Errorf("ids %q then %q (%v)", first, second, err)
	}
}

// TestClipLineMatchesFields pins clipLine's single pass to the definition
// it replaced: strings.Fields joined by spaces, cut to 99 runes and an
// ellipsis when longer than 100, invalid UTF-8 and Unicode spaces included.
func TestClipLineMatchesFields(t *testing.T) {
	want := func(s string) string {
		s = strings.Join(strings.Fields(s), " ")
		if r := []rune(s); len(r) > 100 {
			return string(r[:99]) + "…"
		}
		return s
	}
	pieces := []string{"a", "word", " ", "\t\n", "\u00a0", "\u2003", "é", "日本", "\xff", "\ufffd", "\xe2\x82", "lorem ipsum "}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []string{"", "   ", strings.Repeat("x", 99), strings.Repeat("x", 100), strings.Repeat("x", 101), strings.Repeat("é ", 60)}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.IntN(80); n > 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		if got, w := clipLine(s), want(s); got != w {
			t.Fatalf("clipLine(%q) = %q, want %q", s, got, w)
		}
	}
}
