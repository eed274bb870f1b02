package sim_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/provider/sim"
)

// postRaw posts body and returns the status and the answer's bytes.
func postRaw(t *testing.T, base, path, body string) (int, string) {
	t.Helper()
	res, err := http.Post(base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// What a recording server answered, a replaying server answers byte for
// byte from the saved cassette, streamed or not, and a request the
// cassette does not hold gets 404 naming its digest.
func TestCassetteRecordAndReplay(t *testing.T) {
	rec := sim.NewCassette()
	_, base := start(t, sim.Config{Record: rec})
	reqs := []struct{ path, body string }{
		{chatPath, `{"model":"capsule-sim/planner","messages":[{"role":"user","content":"read_file path=a.go"}],"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]}`},
		{messagesPath, `{"model":"capsule-sim/echo","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello"}]}`},
		{"/v1beta/models/capsule-sim/planner:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
		{ollamaPath, `{"model":"capsule-sim/echo","messages":[{"role":"user","content":"hello"}]}`},
	}
	var want []string
	for _, r := range reqs {
		status, b := postRaw(t, base, r.path, r.body)
		if status != 200 {
			t.Fatalf("%s: %d %s", r.path, status, b)
		}
		want = append(want, b)
	}
	path := filepath.Join(t.TempDir(), "c.json")
	if err := rec.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	cas, err := sim.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	if cas.Len() != len(reqs) {
		t.Fatalf("cassette holds %d entries, want %d", cas.Len(), len(reqs))
	}
	s, base2 := start(t, sim.Config{Replay: cas})
	for i, r := range reqs {
		// Key order and spacing do not change the digest.
		body := strings.ReplaceAll(r.body, `{"role":"user",`, `{ "role" : "user" , `)
		if status, b := postRaw(t, base2, r.path, body); status != 200 || b != want[i] {
			t.Errorf("%s: replay = %d %q, want %q", r.path, status, b, want[i])
		}
	}
	for _, r := range s.Requests() {
		if !r.Replayed {
			t.Errorf("request %d not marked replayed", r.Seq)
		}
	}
	status, b := postRaw(t, base2, chatPath, `{"model":"capsule-sim/planner","messages":[{"role":"user","content":"something else"}]}`)
	if status != 404 || !strings.Contains(b, "no answer for request digest sha256:") {
		t.Errorf("miss = %d %s, want 404 naming the digest", status, b)
	}
	// The rules still apply in replay mode.
	if status, b := postRaw(t, base2, messagesPath, `{"model":"x","max_tokens":10,"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}`); status != 400 {
		t.Errorf("rule broken in replay mode: %d %s, want 400", status, b)
	}
}

// A malformed cassette is refused with the reason.
func TestCassetteMalformed(t *testing.T) {
	entry := `{"digest":"sha256:` + strings.Repeat("ab", 32) + `","api":"anthropic","model":"m","stream":false,"status":200,"content_type":"application/json","body":"{}"}`
	cases := []struct{ name, file, want string }{
		{"not JSON", `{"v":1`, "unexpected EOF"},
		{"wrong kind", `{"v":1,"release":"0.2.0","kind":"journal","entries":[]}`, `kind is "journal"`},
		{"newer version", `{"v":2,"release":"9.0.0","kind":"capsule-sim-cassette","entries":[]}`, "version 2 is newer"},
		{"no version", `{"release":"0.2.0","kind":"capsule-sim-cassette","entries":[]}`, "version 0 is unknown"},
		{"no release", `{"v":1,"kind":"capsule-sim-cassette","entries":[]}`, "no release"},
		{"unknown field", `{"v":1,"release":"0.2.0","kind":"capsule-sim-cassette","entries":[],"extra":1}`, `unknown field "extra"`},
		{"bad digest", `{"v":1,"release":"0.2.0","kind":"capsule-sim-cassette","entries":[` + strings.Replace(entry, "sha256:", "md5:", 1) + `]}`, "entry 0: digest"},
		{"unknown api", `{"v":1,"release":"0.2.0","kind":"capsule-sim-cassette","entries":[` + strings.Replace(entry, `"anthropic"`, `"bard"`, 1) + `]}`, `unknown api "bard"`},
		{"bad status", `{"v":1,"release":"0.2.0","kind":"capsule-sim-cassette","entries":[` + strings.Replace(entry, "200", "42", 1) + `]}`, "status 42"},
		{"duplicate", `{"v":1,"release":"0.2.0","kind":"capsule-sim-cassette","entries":[` + entry + "," + entry + `]}`, "recorded twice"},
	}
	for _, c := range cases {
		_, err := sim.ParseCassette([]byte(c.file))
		if !errors.Is(err, sim.ErrCassette) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrCassette with %q", c.name, err, c.want)
		}
	}
	good := `{"v":1,"release":"0.2.0","kind":"capsule-sim-cassette","entries":[` + entry + `]}`
	if _, err := sim.ParseCassette([]byte(good)); err != nil {
		t.Errorf("valid cassette refused: %v", err)
	}
	if _, err := sim.LoadCassette(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
}
