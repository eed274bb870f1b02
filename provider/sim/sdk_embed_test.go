package sim_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"google.golang.org/genai"

	"github.com/agentcapsule/capsule/provider/sim"
)

// sameVector reports whether got is the simulator's vector for text.
func sameVector[F float32 | float64](got []F, task, text string, dims int) bool {
	v := make([]float32, len(got))
	for i, x := range got {
		v[i] = float32(x)
	}
	return vectorDigest(v) == vectorDigest(sim.Vector(sim.Embed, task, text, dims))
}

// The official openai-go client embeds a batch, with dimensions.
func TestOpenAISDKEmbeddings(t *testing.T) {
	_, url := start(t, sim.Config{})
	client := openaiClient(url)
	res, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: sim.Embed,
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"alpha", "beta"}}, Dimensions: openai.Int(64)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || !sameVector(res.Data[1].Embedding, "", "beta", 64) || res.Usage.PromptTokens != 3 {
		t.Fatalf("answer %+v", res)
	}
}

// The official genai client's EmbedContent, which calls
// batchEmbedContents on the Gemini API, with a task type and
// outputDimensionality.
func TestGenaiSDKEmbedContent(t *testing.T) {
	s, url := start(t, sim.Config{})
	dims := int32(32)
	res, err := genaiClient(t, url).Models.EmbedContent(context.Background(), sim.Embed,
		[]*genai.Content{genai.NewContentFromText("alpha", genai.RoleUser), genai.NewContentFromText("beta", genai.RoleUser)},
		&genai.EmbedContentConfig{TaskType: "RETRIEVAL_DOCUMENT", OutputDimensionality: &dims})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Embeddings) != 2 || !sameVector(res.Embeddings[0].Values, "RETRIEVAL_DOCUMENT", "alpha", 32) {
		t.Fatalf("answer %+v", res)
	}
	if log := s.Received(sim.GeminiEmbed, sim.Embed); len(log) != 1 || log[0].Path != "/v1beta/models/capsule-sim/embed:batchEmbedContents" {
		t.Fatalf("log %+v, want one batchEmbedContents", log)
	}
}

// The official ollama/api client's Embed.
func TestOllamaSDKEmbed(t *testing.T) {
	_, base := start(t, sim.Config{})
	u, _ := url.Parse(base)
	res, err := api.NewClient(u, http.DefaultClient).Embed(context.Background(), &api.EmbedRequest{Model: sim.Embed, Input: []string{"alpha", "beta"}, Dimensions: 16})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Embeddings) != 2 || !sameVector(res.Embeddings[1], "", "beta", 16) {
		t.Fatalf("answer %+v", res)
	}
	_, err = api.NewClient(u, http.DefaultClient).Embed(context.Background(), &api.EmbedRequest{Model: "all-minilm", Input: "x"})
	if se, ok := err.(api.StatusError); !ok || se.StatusCode != 404 || se.ErrorMessage != "model 'all-minilm' not found" {
		t.Fatalf("unknown model: %v", err)
	}
}
