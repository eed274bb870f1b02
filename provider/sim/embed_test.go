package sim_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/provider/sim"
)

const (
	embeddingsPath = "/v1/embeddings"
	embedPath      = "/v1beta/models/capsule-sim/embed:embedContent"
	batchEmbedPath = "/v1beta/models/capsule-sim/embed:batchEmbedContents"
	ollamaEmbed    = "/api/embed"
)

// vectorDigest is the SHA-256 of a vector's float32 values, little-endian.
func vectorDigest(v []float32) string {
	h := sha256.New()
	binary.Write(h, binary.LittleEndian, v)
	return hex.EncodeToString(h.Sum(nil))
}

// The vectors are a function of model, task type, text and dimensions
// only, the same bits on every machine: these digests were computed once
// and must never change (an index built against the simulator on one
// machine is rebuilt byte for byte on another).
func TestVectorGolden(t *testing.T) {
	cases := []struct {
		task, text string
		dims       int
		want       string
	}{
		{"", "The build failed on arm64.", sim.EmbedDims, "8d087dccff3341db160918c6fe8265315ba604052c651a1b5c18433f84302b26"},
		{"RETRIEVAL_QUERY", "The build failed on arm64.", sim.EmbedDims, "3e25f96f39cda8e278d4870ebf19129cbed2243ae6651f46cfd7cd0f5e4656d3"},
		{"", "The build failed on arm64.", 16, "862afc4acb6b156b3d5b198213f3f2e733265e6e8f9128404279e3e896569d1b"},
		{"", "", 8, "da4694421b90756b88d8c88357060e334958d3ccbff159128d6c9c269f75217a"},
	}
	for _, c := range cases {
		v := sim.Vector(sim.Embed, c.task, c.text, c.dims)
		if got := vectorDigest(v); got != c.want {
			t.Errorf("Vector(%q, %q, %d) digest = %s, want %s", c.task, c.text, c.dims, got, c.want)
		}
	}
}

// Every vector has the requested length and unit norm; different texts,
// task types and dimensions give different vectors.
func TestVectorShape(t *testing.T) {
	seen := map[string]string{}
	for _, dims := range []int{1, 2, 16, sim.EmbedDims} {
		for _, task := range []string{"", "RETRIEVAL_DOCUMENT"} {
			for _, text := range []string{"", "!!!", "alpha", "alpha beta", "beta alpha", "Alpha, beta."} {
				v := sim.Vector(sim.Embed, task, text, dims)
				var sum float64
				for _, x := range v {
					sum += float64(x) * float64(x)
				}
				if len(v) != dims || math.Abs(sum-1) > 1e-5 {
					t.Errorf("Vector(%q, %q, %d): length %d, squared norm %v; want %d and 1", task, text, dims, len(v), sum, dims)
				}
				key := fmt.Sprintf("%d/%s/%s", dims, task, text)
				if d := vectorDigest(v); dims >= 64 && seen[d] != "" && text != "Alpha, beta." {
					t.Errorf("%s and %s have the same vector", key, seen[d])
				} else {
					seen[d] = key
				}
			}
		}
	}
	if a, b := vectorDigest(sim.Vector(sim.Embed, "", "alpha beta", 64)), vectorDigest(sim.Vector(sim.Embed, "", "ALPHA beta!", 64)); a != b {
		t.Errorf("case and punctuation changed the vector")
	}
}

// floats reads a JSON array of numbers.
func floats(t *testing.T, v any) []float32 {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not an array", v)
	}
	out := make([]float32, len(l))
	for i, x := range l {
		out[i] = float32(x.(float64))
	}
	return out
}

// Each provider's endpoint answers the simulator's vectors in its own
// shape, honouring dimensions, task type and OpenAI's base64 encoding.
func TestEmbedEndpoints(t *testing.T) {
	s, base := start(t, sim.Config{})
	want := func(task, text string, dims int) string { return vectorDigest(sim.Vector(sim.Embed, task, text, dims)) }
	status, v := post(t, base, embeddingsPath, `{"model":"capsule-sim/embed","input":["alpha","beta"],"dimensions":32}`)
	data, _ := v["data"].([]any)
	if status != 200 || len(data) != 2 || vectorDigest(floats(t, field(data[1], "embedding"))) != want("", "beta", 32) || field(data[1], "index") != 1.0 {
		t.Errorf("openai: status %d, answer %v", status, v)
	}
	status, v = post(t, base, embeddingsPath, `{"model":"capsule-sim/embed","input":"alpha","encoding_format":"base64"}`)
	raw, _ := base64.StdEncoding.DecodeString(str(field(v["data"].([]any)[0], "embedding")))
	vec := make([]float32, len(raw)/4)
	binary.Read(strings.NewReader(string(raw)), binary.LittleEndian, vec)
	if status != 200 || vectorDigest(vec) != want("", "alpha", sim.EmbedDims) {
		t.Errorf("openai base64: status %d, %d values", status, len(vec))
	}
	status, v = post(t, base, batchEmbedPath, `{"requests":[
		{"model":"models/capsule-sim/embed","content":{"parts":[{"text":"alpha"}]},"taskType":"RETRIEVAL_QUERY","outputDimensionality":8},
		{"model":"models/capsule-sim/embed","content":{"parts":[{"text":"beta"}]}}]}`)
	embs, _ := v["embeddings"].([]any)
	if status != 200 || len(embs) != 2 || vectorDigest(floats(t, field(embs[0], "values"))) != want("RETRIEVAL_QUERY", "alpha", 8) ||
		vectorDigest(floats(t, field(embs[1], "values"))) != want("", "beta", sim.EmbedDims) {
		t.Errorf("gemini batch: status %d, answer %v", status, v)
	}
	status, v = post(t, base, embedPath, `{"content":{"parts":[{"text":"alpha"}]}}`)
	if status != 200 || vectorDigest(floats(t, field(v, "embedding", "values"))) != want("", "alpha", sim.EmbedDims) {
		t.Errorf("gemini single: status %d, answer %v", status, v)
	}
	status, v = post(t, base, ollamaEmbed, `{"model":"capsule-sim/embed","input":["alpha"],"dimensions":4}`)
	embs, _ = v["embeddings"].([]any)
	if status != 200 || len(embs) != 1 || vectorDigest(floats(t, embs[0])) != want("", "alpha", 4) {
		t.Errorf("ollama: status %d, answer %v", status, v)
	}
	if n := s.EmbeddedTexts(); n != 7 {
		t.Errorf("EmbeddedTexts = %d, want 7", n)
	}
}

func str(v any) string { s, _ := v.(string); return s }

// The embeddings endpoints enforce each provider's documented rules and
// answer a violation in the provider's error shape.
func TestEmbedRules(t *testing.T) {
	s, base := start(t, sim.Config{})
	long := strings.Repeat("word ", 4*sim.EmbedContext/5+10) // past 8192 tokens
	many := func(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	greq := `{"model":"models/capsule-sim/embed","content":{"parts":[{"text":"x"}]}}`
	cases := []struct {
		name, api, path, body string
		status                int
		want                  string
	}{
		{"openai no model", "openai", embeddingsPath, `{"input":"x"}`, 400, "you must provide a model parameter"},
		{"openai unknown model", "openai", embeddingsPath, `{"model":"text-embedding-3-small","input":"x"}`, 404, "The model `text-embedding-3-small` does not exist"},
		{"openai empty string", "openai", embeddingsPath, `{"model":"capsule-sim/embed","input":["a",""]}`, 400, "'$.input' is invalid"},
		{"openai no input", "openai", embeddingsPath, `{"model":"capsule-sim/embed"}`, 400, "'$.input' is invalid"},
		{"openai too many inputs", "openai", embeddingsPath, `{"model":"capsule-sim/embed","input":[` + many(2049, `"a"`) + `]}`, 400, "'$.input' is invalid"},
		{"openai input too long", "openai", embeddingsPath, `{"model":"capsule-sim/embed","input":["a","` + long + `"]}`, 400, "Invalid 'input[1]': maximum input length is 8192 tokens."},
		{"openai request too long", "openai", embeddingsPath, `{"model":"capsule-sim/embed","input":[` + many(40, `"`+strings.Repeat("w", 32000)+`"`) + `]}`, 400, "Requested 320000 tokens, max 300000 tokens per request"},
		{"openai dimensions", "openai", embeddingsPath, `{"model":"capsule-sim/embed","input":"x","dimensions":769}`, 400, "Invalid value for 'dimensions'"},
		{"openai encoding", "openai", embeddingsPath, `{"model":"capsule-sim/embed","input":"x","encoding_format":"int8"}`, 400, "Supported values are: 'float' and 'base64'."},
		{"gemini unknown model", "gemini", "/v1beta/models/gemini-embedding-001:batchEmbedContents", `{"requests":[]}`, 404, "models/gemini-embedding-001 is not found"},
		{"gemini batch too big", "gemini", batchEmbedPath, `{"requests":[` + many(101, greq) + `]}`, 400, "at most 100 requests can be in one batch"},
		{"gemini empty batch", "gemini", batchEmbedPath, `{"requests":[]}`, 400, "must contain at least one request"},
		{"gemini model mismatch", "gemini", batchEmbedPath, `{"requests":[{"model":"models/other","content":{"parts":[{"text":"x"}]}}]}`, 400, "does not match the model of the URL"},
		{"gemini no parts", "gemini", batchEmbedPath, `{"requests":[{"model":"models/capsule-sim/embed","content":{"parts":[]}}]}`, 400, "requests[0].content.parts: contents.parts must not be empty."},
		{"gemini part without data", "gemini", embedPath, `{"content":{"parts":[{}]}}`, 400, "required oneof field 'data'"},
		{"gemini task type", "gemini", embedPath, `{"content":{"parts":[{"text":"x"}]},"taskType":"SEARCH"}`, 400, "Invalid value at 'EmbedContentRequest.task_type'"},
		{"gemini dimensionality", "gemini", embedPath, `{"content":{"parts":[{"text":"x"}]},"outputDimensionality":0}`, 400, "output_dimensionality: must be between 1 and 768"},
		{"ollama unknown model", "ollama", ollamaEmbed, `{"model":"nomic-embed-text","input":"x"}`, 404, "model 'nomic-embed-text' not found"},
		{"ollama input type", "ollama", ollamaEmbed, `{"model":"capsule-sim/embed","input":[1]}`, 400, "invalid input type"},
		{"ollama no truncation", "ollama", ollamaEmbed, `{"model":"capsule-sim/embed","input":"` + long + `","truncate":false}`, 400, "the input length exceeds the context length"},
		{"not JSON", "openai", embeddingsPath, `{"model":`, 400, "We could not parse the JSON body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := len(s.Requests())
			status, v := post(t, base, c.path, c.body)
			if status != c.status {
				t.Errorf("status = %d, want %d (%v)", status, c.status, v)
			}
			if msg := errorShape(t, c.api, c.status, v); !strings.Contains(msg, c.want) {
				t.Errorf("message = %q, want it to contain %q", msg, c.want)
			}
			if log := s.Requests(); len(log) != n+1 || log[n].Status != c.status || len(log[n].Violations) == 0 {
				t.Errorf("request log = %+v, want one entry with status %d and its violations", log[n:], c.status)
			}
		})
	}
	if n := s.EmbeddedTexts(); n != 0 {
		t.Errorf("EmbeddedTexts = %d after refusals only", n)
	}
}

// What each endpoint cuts instead of refusing: Gemini input past 2,048
// tokens, Ollama input past the context (truncate defaults to true), and
// an empty Ollama input, which embeds nothing.
func TestEmbedTruncates(t *testing.T) {
	_, base := start(t, sim.Config{})
	long := strings.Repeat("alpha ", 2000) + "omega" // past 2,048 tokens; "omega" is cut
	cut := strings.Repeat("alpha ", 2000)[:4*2048]
	status, v := post(t, base, embedPath, `{"content":{"parts":[{"text":"`+long+`"}]}}`)
	if status != 200 || vectorDigest(floats(t, field(v, "embedding", "values"))) != vectorDigest(sim.Vector(sim.Embed, "", cut, sim.EmbedDims)) {
		t.Errorf("gemini: status %d, not the vector of the first 2,048 tokens", status)
	}
	status, v = post(t, base, ollamaEmbed, `{"model":"capsule-sim/embed","input":""}`)
	if embs, ok := v["embeddings"].([]any); status != 200 || !ok || len(embs) != 0 {
		t.Errorf("ollama empty input: status %d, answer %v", status, v)
	}
}

// A fault makes the endpoint fail once FailAfter texts were embedded, in
// the provider's error shape with Retry-After, for Times requests; a
// corruption spoils the answers.
func TestEmbedFaults(t *testing.T) {
	s, base := start(t, sim.Config{})
	s.SetEmbedFaults(sim.EmbedFaults{Status: 503, FailAfter: 3, RetryAfter: "2", Times: 1})
	body := `{"model":"capsule-sim/embed","input":["a","b"]}`
	if status, _ := post(t, base, embeddingsPath, body); status != 200 {
		t.Fatalf("first request: status %d", status)
	}
	res, err := http.Post(base+embeddingsPath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 503 || res.Header.Get("Retry-After") != "2" || !strings.Contains(string(b), `"type":"server_error"`) {
		t.Errorf("second request: %d %v %s, want 503 server_error with Retry-After 2", res.StatusCode, res.Header, b)
	}
	if status, _ := post(t, base, embeddingsPath, body); status != 200 || s.EmbeddedTexts() != 4 {
		t.Errorf("after Times: status %d, %d texts embedded; want recovery", status, s.EmbeddedTexts())
	}
	s.SetEmbedFaults(sim.EmbedFaults{Status: 429})
	if status, v := post(t, base, batchEmbedPath, `{"requests":[{"model":"models/capsule-sim/embed","content":{"parts":[{"text":"x"}]}}]}`); status != 429 || field(v, "error", "status") != "RESOURCE_EXHAUSTED" {
		t.Errorf("gemini 429: %d %v", status, v)
	}
	for c, want := range map[sim.Corruption]string{sim.CorruptTruncate: "unexpected end", sim.CorruptNaN: "invalid character 'N'"} {
		s.SetEmbedFaults(sim.EmbedFaults{Corrupt: c})
		res, err := http.Post(base+ollamaEmbed, "application/json", strings.NewReader(`{"model":"capsule-sim/embed","input":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var v any
		if err := json.Unmarshal(b, &v); res.StatusCode != 200 || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: status %d, decode error %v, want %q", c, res.StatusCode, err, want)
		}
	}
	s.SetEmbedFaults(sim.EmbedFaults{Unauthorized: true})
	req, _ := http.NewRequest("POST", base+embeddingsPath, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-test-123")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 401 || !strings.Contains(string(b), "Incorrect API key provided: sk-test-123") {
		t.Errorf("unauthorized: %d %s", res.StatusCode, b)
	}
}
