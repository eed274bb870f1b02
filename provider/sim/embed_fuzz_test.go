package sim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcapsule/capsule/provider/sim"
)

// embedFuzzPaths are the embeddings endpoints a fuzzed body goes to.
var embedFuzzPaths = []string{embeddingsPath, embedPath, batchEmbedPath, ollamaEmbed}

// FuzzServeEmbed: any body to an embeddings endpoint is answered (never a
// panic): vectors of the requested length, or a JSON error body.
func FuzzServeEmbed(f *testing.F) {
	for i, b := range []string{
		`{"model":"capsule-sim/embed","input":["a","b"],"dimensions":3,"encoding_format":"base64"}`,
		`{"content":{"parts":[{"text":"x"},{"text":""}]},"outputDimensionality":1e3,"taskType":"CLUSTERING"}`,
		`{"requests":[{"model":"models/capsule-sim/embed","content":{"parts":[{"inlineData":{}}]}}]}`,
		`{"model":"capsule-sim/embed","input":"x","truncate":false,"dimensions":-1}`,
		`{"model":"capsule-sim/embed","input":[[1,2]]}`,
	} {
		f.Add(uint8(i), b)
	}
	s := sim.New(sim.Config{})
	f.Fuzz(func(t *testing.T, path uint8, body string) {
		p := embedFuzzPaths[int(path)%len(embedFuzzPaths)]
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, p, strings.NewReader(body)))
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s: status %d with a body that is not JSON: %q", p, rec.Code, rec.Body.String())
		}
	})
}
