package remote_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentcapsule/capsule/memory"
	"github.com/agentcapsule/capsule/memory/remote"
	"github.com/agentcapsule/capsule/provider"
	"github.com/agentcapsule/capsule/provider/sim"
)

// fastRetry retries without waiting long, for tests.
var fastRetry = provider.Retry{Attempts: 3, Base: time.Millisecond, Max: 2 * time.Millisecond, MaxRetryAfter: time.Second}

// testKey stands for a key from the host's secret store.
const testKey = "sk-capsule-test-9f8e7d6c5b4a"

var providers = []remote.Provider{remote.OpenAI, remote.Gemini, remote.Ollama}

// serve starts the simulator on a loopback socket for one test.
func serve(t *testing.T, cfg sim.Config) *sim.Running {
	t.Helper()
	r, err := sim.Start("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// base is the URL each provider's client takes for the simulator.
func base(p remote.Provider, url string) string {
	if p == remote.OpenAI {
		return url + "/v1"
	}
	return url
}

// embedder returns an embedder of the simulator's model for p.
func embedder(t *testing.T, p remote.Provider, url string, mod func(*remote.Config)) memory.Embedder {
	t.Helper()
	cfg := remote.Config{Provider: p, Model: sim.Embed, URL: base(p, url), Retry: fastRetry}
	if mod != nil {
		mod(&cfg)
	}
	e, err := remote.New(cfg, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var texts = []string{"The build failed on arm64.", "Deploy the web tier on Friday.", "alpha beta", "beta alpha", "The cache is cold."}

// near reports whether a and b agree to float32 rounding.
func near(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return true
}

// Each provider's embedder, through its real SDK over a loopback socket,
// returns the simulator's vectors in order, in batches of Config.Batch,
// with unit norm and the requested dimensions.
func TestEmbedThroughSDKs(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p), func(t *testing.T) {
			s := serve(t, sim.Config{})
			for _, dims := range []int{0, 32} {
				e := embedder(t, p, s.URL, func(c *remote.Config) { c.Batch, c.Dims = 2, dims })
				want := dims
				if want == 0 {
					want = sim.EmbedDims
				}
				n := len(s.Requests())
				got, err := e.Embed(context.Background(), texts)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range got {
					if len(v) != want || !near(v, sim.Vector(sim.Embed, "", texts[i], want)) {
						t.Errorf("dims %d: vector %d (%d values) is not the simulator's", dims, i, len(v))
					}
				}
				if log := s.Requests()[n:]; len(log) != 3 {
					t.Errorf("dims %d: %d requests for 5 texts in batches of 2, want 3", dims, len(log))
				} else if sent := strings.Contains(string(log[0].Body), "imension"); sent != (dims != 0) {
					t.Errorf("dims %d: dimensions sent = %v in %s", dims, sent, log[0].Body)
				}
				if id := e.Identity(); id.Dims != want || !id.Normalized || id.Name != string(p)+":"+sim.Embed {
					t.Errorf("identity %+v", id)
				}
			}
		})
	}
}

// The same texts give the same vector bits from two servers and two
// embedders, and every vector has unit norm.
func TestEmbedDeterministic(t *testing.T) {
	for _, p := range providers {
		var runs [2][][]float32
		for k := range runs {
			s := serve(t, sim.Config{})
			v, err := embedder(t, p, s.URL, nil).Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			runs[k] = v
		}
		for i := range texts {
			var sum float64
			for j, x := range runs[0][i] {
				if math.Float32bits(x) != math.Float32bits(runs[1][i][j]) {
					t.Fatalf("%s: text %d value %d differs between runs", p, i, j)
				}
				sum += float64(x) * float64(x)
			}
			if math.Abs(sum-1) > 1e-6 {
				t.Errorf("%s: text %d has squared norm %v", p, i, sum)
			}
		}
	}
}

// The Gemini task type reaches the API and changes the vectors.
func TestGeminiTaskType(t *testing.T) {
	s := serve(t, sim.Config{})
	e := embedder(t, remote.Gemini, s.URL, func(c *remote.Config) { c.TaskType = "RETRIEVAL_QUERY" })
	got, err := e.Embed(context.Background(), texts[:1])
	if err != nil {
		t.Fatal(err)
	}
	if !near(got[0], sim.Vector(sim.Embed, "RETRIEVAL_QUERY", texts[0], sim.EmbedDims)) || near(got[0], sim.Vector(sim.Embed, "", texts[0], sim.EmbedDims)) {
		t.Errorf("vector is not the RETRIEVAL_QUERY one")
	}
}

// The identity's model digest changes with what changes the vectors and
// with nothing else.
func TestIdentityDigest(t *testing.T) {
	id := func(cfg remote.Config, key string) string {
		e, err := remote.New(cfg, key)
		if err != nil {
			t.Fatal(err)
		}
		return e.Identity().Model
	}
	c := remote.Config{Provider: remote.OpenAI, Model: "text-embedding-3-small"}
	d := id(c, "k1")
	if !strings.HasPrefix(d, "sha256:") || len(d) != 71 {
		t.Fatalf("digest %q", d)
	}
	same := []remote.Config{
		{Provider: remote.OpenAI, Model: "text-embedding-3-small", URL: "http://127.0.0.1:1/v1"},
		{Provider: remote.OpenAI, Model: "text-embedding-3-small", Dims: 1536, Batch: 7},
	}
	for _, s := range same {
		if got := id(s, "another key"); got != d {
			t.Errorf("%+v: digest %s, want %s", s, got, d)
		}
	}
	other := []remote.Config{
		{Provider: remote.OpenAI, Model: "text-embedding-3-small", Dims: 512},
		{Provider: remote.OpenAI, Model: "text-embedding-3-large"},
		{Provider: remote.Gemini, Model: "gemini-embedding-001", Dims: 1536},
		{Provider: remote.Gemini, Model: "gemini-embedding-001", Dims: 1536, TaskType: "RETRIEVAL_DOCUMENT"},
		{Provider: remote.Ollama, Model: "nomic-embed-text"},
	}
	seen := map[string]bool{d: true}
	for _, o := range other {
		got := id(o, "k")
		if seen[got] {
			t.Errorf("%+v: digest %s not distinct", o, got)
		}
		seen[got] = true
	}
}

// New refuses what it cannot serve.
func TestNewRefuses(t *testing.T) {
	cases := []struct {
		cfg  remote.Config
		key  string
		want string
	}{
		{remote.Config{Provider: "cohere", Model: "embed-v4"}, "k", "unknown provider"},
		{remote.Config{Provider: remote.OpenAI}, "k", "no model"},
		{remote.Config{Provider: remote.Ollama, Model: "my-embedder"}, "", "default dimensions are not known"},
		{remote.Config{Provider: remote.OpenAI, Model: "text-embedding-ada-002", Dims: 512}, "k", "takes no other"},
		{remote.Config{Provider: remote.OpenAI, Model: "text-embedding-3-small", TaskType: "RETRIEVAL_QUERY"}, "k", "takes no task type"},
		{remote.Config{Provider: remote.Gemini, Model: "gemini-embedding-001"}, "", "no API key"},
	}
	for _, c := range cases {
		_, err := remote.New(c.cfg, c.key)
		if !errors.Is(err, remote.ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want ErrConfig with %q", c.cfg, err, c.want)
		}
	}
	if _, err := remote.New(remote.Config{Provider: remote.Ollama, Model: "my-embedder", Dims: 384}, ""); err != nil {
		t.Errorf("an unknown model with dims: %v", err)
	}
}

// One embedder serves concurrent calls (run with -race).
func TestConcurrentEmbed(t *testing.T) {
	for _, p := range providers {
		s := serve(t, sim.Config{})
		e := embedder(t, p, s.URL, func(c *remote.Config) { c.Batch = 2 })
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				_, err := e.Embed(context.Background(), texts)
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
	}
}
